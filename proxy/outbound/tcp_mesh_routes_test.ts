/**
 * VirtualService `tcp` rules bound to mesh at a sidecar, with real TCP: the route configurations come
 * from shared's meshTcpRouteConfigurations (what meshd pushes) and {@link OutboundTcp.toService} carries
 * a connection to service `a`'s address to the rule's destination: `b`, or `a` and `b` by weight; a
 * rule whose sourceLabels are another workload's keeps `a`, as does no rule.
 */
import assert from "node:assert/strict";
import net from "node:net";
import type { VirtualServiceSpec } from "../../shared/api/types.gen.ts";
import { meshTcpRouteConfigurations } from "../../shared/routing/mod.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import type { RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { OutboundStats } from "./outbound_stats.ts";
import { OutboundTcp } from "./tcp_forward.ts";
import { endpoint, listen, service } from "./tls_passthrough_test_support.ts";

/** A TCP server that answers every connection with `name` and closes. */
function namedServer(name: string): net.Server {
  return net.createServer((s) => s.end(name));
}

/** What one connection through `toService(a)` reads. */
function through(port: number): Promise<string> {
  return within(
    new Promise<string>((resolve, reject) => {
      let got = "";
      const c = net.connect(port, "127.0.0.1");
      c.on("data", (d) => (got += d));
      c.on("end", () => resolve(got));
      c.on("error", reject);
    }),
    5000,
    "a connection through the sidecar",
  );
}

Deno.test("mesh tcp rules: a service address's connections go to the rule's destination(s); other sources keep theirs", async () => {
  const servers = [namedServer("a"), namedServer("b")];
  const [aPort, bPort] = await Promise.all(servers.map(listen));
  const services: Record<string, ServiceInfo> = {
    "foo/a": {
      ...service("a", ["a.foo.svc.cluster.local"], [[9000, "TCP"]], [endpoint(aPort, 9000, false)]),
      addresses: ["10.0.0.10"],
    },
    "foo/b": {
      ...service("b", ["b.foo.svc.cluster.local"], [[9000, "TCP"]], [endpoint(bPort, 9000, false)]),
      addresses: ["10.0.0.11"],
    },
  };
  const base = snapshotOf("PERMISSIVE", undefined);
  const withRules = (tcp: VirtualServiceSpec["tcp"]): RuntimeSnapshot => {
    const routes = meshTcpRouteConfigurations(
      base.workload!,
      [{ namespace: "foo", name: "a-to-b", spec: { hosts: ["a"], tcp } }],
      Object.entries(services).map(([key, s]) => ({ key, hosts: s.hosts, ports: s.ports })),
    );
    return { ...base, services, routes: Object.fromEntries(routes.map((r) => [r.name, r])) };
  };
  let snapshot = withRules([{
    match: [{ port: 9000 }],
    route: [{ destination: { host: "b", port: { number: 9000 } } }],
  }]);
  const log = new RecordingLog();
  const tcp = new OutboundTcp({
    snapshot: () => snapshot,
    log,
    observer: new OutboundStats(),
    listenerPort: () => 0,
  });
  const a = services["foo/a"];
  const front = net.createServer({ allowHalfOpen: true }, (raw) => {
    tcp.toService(raw, {
      key: "foo/a",
      service: a,
      port: a.ports[0],
      cluster: "outbound|9000||a.foo.svc.cluster.local",
    });
  });
  const port = await listen(front);
  try {
    assert.equal(await through(port), "b", "the rule's destination");
    snapshot = withRules([{
      route: [
        { destination: { host: "a", port: { number: 9000 } }, weight: 50 },
        { destination: { host: "b", port: { number: 9000 } }, weight: 50 },
      ],
    }]);
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await through(port));
    assert.deepEqual(got.sort(), ["a", "a", "b", "b"], "weighted 50/50");
    snapshot = withRules([{
      match: [{ sourceLabels: { app: "other" } }],
      route: [{ destination: { host: "b", port: { number: 9000 } } }],
    }]);
    assert.deepEqual(Object.keys(snapshot.routes), [], "another workload's rule");
    assert.equal(await through(port), "a", "no rule holds: the service itself");
    snapshot = withRules([{ route: [{ destination: { host: "nowhere", port: { number: 9000 } } }] }]);
    assert.equal(await through(port), "", "a destination that is no service: refused");
    assert.ok(
      log.entries.some((e) => /VirtualService tcp route foo\/a-to-b.tcp.0/.test(String(e.fields?.reason))),
    );
  } finally {
    tcp.close();
    await Promise.all([front, ...servers].map((s) => new Promise((r) => s.close(r))));
  }
});
