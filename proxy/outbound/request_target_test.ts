/**
 * Request targets through the outbound listener, as raw bytes, under each `pathNormalization`
 * option: a client sidecar forwarding over mutual TLS to an inbound listener with a DENY
 * `paths: ["/headers"]`, and a gateway that routes `/headers` elsewhere and has the same DENY.
 * Applications echo the request line and Host they received, so each case checks that the path the
 * policy saw, the path the route matched and the path forwarded are one. Also `#` (CVE-2021-32779)
 * and the absolute form (the target's authority routes and is forwarded as Host).
 */
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import assert from "node:assert/strict";
import { PATH_NORMALIZATIONS, type PathNormalization } from "../../shared/mod.ts";
import { PATH_VARIANTS } from "../../shared/policy/authorization/path_variants.ts";
import type { RouteConfiguration } from "../../shared/routing/mod.ts";
import { InboundListener } from "../inbound/listener.ts";
import { forwardedTarget, parseEcho, sendRaw, TargetEcho } from "../inbound/target_echo.ts";
import { certificateInfo, makeCa, makeLeaf, RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import type { RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { OutboundListener } from "./listener.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const ca = await makeCa("Mesh Root CA");
const serverCert = certificateInfo(await makeLeaf(ca, { uris: [SERVER_ID] }), ca, SERVER_ID);
const clientCert = certificateInfo(await makeLeaf(ca, { uris: [CLIENT_ID] }), ca, CLIENT_ID);

const DENY_HEADERS = {
  "foo/deny-headers": {
    name: "deny-headers",
    namespace: "foo",
    action: "DENY",
    rules: [{ to: [{ operation: { paths: ["/headers"] } }] }],
  },
};

function service(name: string, port: number, proxied: boolean): ServiceInfo {
  const endpoint = endpointInfo({
    workload: name,
    ports: { "8000": port },
    identity: proxied ? SERVER_ID : "",
  });
  return serviceInfo({ name, ports: [{ number: 8000 }], endpoints: [endpoint] });
}

/** The snapshot `base` with the mesh's option in its workload settings. */
function withOption(
  base: RuntimeSnapshot,
  option: PathNormalization,
  extra: Partial<RuntimeSnapshot>,
): RuntimeSnapshot {
  return {
    ...base,
    ...extra,
    workload: { ...base.workload!, settings: { ...DEFAULT_PROXY_SETTINGS, pathNormalization: option } },
  };
}

const exact = (exact: string) => ({ exact, prefix: "", regex: "", ignoreCase: false });
const prefix = (prefix: string) => ({ exact: "", prefix, regex: "", ignoreCase: false });
const to = (name: string) => [{ host: `${name}.foo.svc.cluster.local`, port: 8000, weight: 100 }];

/** The gateway's port 8080: gw.example goes to b; elsewhere /headers to b and the rest to a. */
const ROUTES: RouteConfiguration = {
  name: "http.8080",
  port: 8080,
  bindPort: 8080,
  gateways: ["foo/gw"],
  virtualHosts: [
    {
      name: "gw.example:8080",
      domains: ["gw.example"],
      routes: [{ name: "gw", matches: [prefix("/")], destinations: to("b") }],
    },
    {
      name: "*:8080",
      domains: ["*"],
      routes: [
        { name: "headers", matches: [exact("/headers")], destinations: to("b") },
        { name: "rest", matches: [prefix("/")], destinations: to("a") },
      ],
    },
  ],
};

const get = (target: string, host: string) =>
  `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

const a = await TargetEcho.start("a");
const b = await TargetEcho.start("b");
let option: PathNormalization = "DECODE_AND_MERGE_SLASHES";
let gatewayPolicies = true;
const inbound = new InboundListener({
  address: "127.0.0.1",
  port: 0,
  appAddress: "127.0.0.1",
  appPort: a.port,
  snapshot: () => withOption(snapshotOf("STRICT", serverCert), option, { authorizations: DENY_HEADERS }),
  log: new RecordingLog(),
});
await inbound.start();
const sidecar = new OutboundListener({
  address: "127.0.0.1",
  port: 0,
  snapshot: () =>
    withOption(snapshotOf("PERMISSIVE", clientCert), option, {
      services: { "foo/a": service("a", inbound.port, true) },
    }),
  log: new RecordingLog(),
});
const gatewaySnapshot = () =>
  withOption(snapshotOf("PERMISSIVE", undefined), option, {
    services: { "foo/a": service("a", a.port, false), "foo/b": service("b", b.port, false) },
    routes: { "http.8080": ROUTES },
    authorizations: gatewayPolicies ? DENY_HEADERS : {},
  });
const gateway = new OutboundListener({
  address: "127.0.0.1",
  port: 0,
  snapshot: gatewaySnapshot,
  log: new RecordingLog(),
  routeNames: ["http.8080"],
});
await Promise.all([sidecar.start(), gateway.start()]);
Deno.test.afterAll(async () => {
  await Promise.all([sidecar.close(), gateway.close(), inbound.close()]);
  await Promise.all([a.stop(), b.stop()]);
});

Deno.test("sidecar over mutual TLS: 400, 403 exactly when the path is /headers, else forwarded as the policy saw it", async () => {
  for (option of PATH_NORMALIZATIONS) {
    const failures: string[] = [];
    for (const { target, expected } of PATH_VARIANTS) {
      const want = expected[option];
      // The absolute-form variants name the service instead of example.com.
      const r = await sendRaw(
        sidecar.port,
        get(target.replace("http://example.com", "http://a.foo:8000"), "a.foo:8000"),
      );
      if (want === null || want === "/headers") {
        const status = want === null ? 400 : 403;
        if (r.status !== status) failures.push(`${target}: ${r.status} (want ${status})`);
        continue;
      }
      const line = r.status === 200 ? parseEcho(r.body).line : `status ${r.status} ${r.body}`;
      const wantLine = `GET ${forwardedTarget(target, want)} HTTP/1.1`;
      if (line !== wantLine) failures.push(`${target}: ${line} (want ${wantLine})`);
    }
    assert.deepEqual(failures, [], option);
  }
});

Deno.test("gateway: the route, the policy and the application see the one normalized path", async () => {
  for (option of PATH_NORMALIZATIONS) {
    for (gatewayPolicies of [true, false]) {
      const failures: string[] = [];
      for (const { target, expected } of PATH_VARIANTS) {
        const want = expected[option];
        const r = await sendRaw(gateway.port, get(target, "any.example"));
        if (want === null || (want === "/headers" && gatewayPolicies)) {
          const status = want === null ? 400 : 403;
          if (r.status !== status) failures.push(`${target}: ${r.status} (want ${status})`);
          continue;
        }
        const echoed = r.status === 200 ? parseEcho(r.body) : undefined;
        const got = echoed ? `${echoed.name} ${echoed.line}` : `status ${r.status}`;
        // example.com's authority selects the "*" host as any.example does.
        const wantGot = `${want === "/headers" ? "b" : "a"} GET ${forwardedTarget(target, want)} HTTP/1.1`;
        if (got !== wantGot) failures.push(`${target}: ${got} (want ${wantGot})`);
      }
      assert.deepEqual(failures, [], `${option}, policies ${gatewayPolicies}`);
    }
  }
  option = "DECODE_AND_MERGE_SLASHES";
  gatewayPolicies = true;
});

Deno.test("absolute form: the authority routes and is forwarded as Host, at the sidecar and at the gateway", async () => {
  const viaSidecar = await sendRaw(sidecar.port, get("http://a.foo:8000/anything?x", "evil.example"));
  assert.deepEqual(parseEcho(viaSidecar.body), {
    name: "a",
    line: "GET /anything?x HTTP/1.1",
    hosts: ["a.foo:8000"],
  });
  const viaGateway = await sendRaw(gateway.port, get("http://gw.example/anything", "other.example"));
  assert.deepEqual(parseEcho(viaGateway.body), {
    name: "b",
    line: "GET /anything HTTP/1.1",
    hosts: ["gw.example"],
  });
  const byHost = await sendRaw(gateway.port, get("/anything", "other.example"));
  assert.equal(parseEcho(byHost.body).name, "a");
});

Deno.test("a # in the target is 400 at the sidecar and at the gateway, whatever the option", async () => {
  for (option of PATH_NORMALIZATIONS) {
    for (const port of [sidecar.port, gateway.port]) {
      for (const target of ["/headers#x", "/anything#/../headers", "http://gw.example/headers#"]) {
        assert.equal((await sendRaw(port, get(target, "a.foo:8000"))).status, 400, `${option} ${target}`);
      }
    }
  }
  option = "DECODE_AND_MERGE_SLASHES";
});
