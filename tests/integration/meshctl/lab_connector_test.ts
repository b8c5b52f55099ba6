/**
 * meshctl's proxy commands against the proxies of a real lab (root), in lab orchestrator mode
 * (`--lab`): meshd and every proxy are reached through port-forwards meshctl opens itself. A small
 * lab (two workloads with sidecars) with an AuthorizationPolicy and a RequestAuthentication; then
 * proxy-status, proxy-config all/cluster/listener/secret/route/log/ecds, proxy-stats,
 * rootca-compare, and authz check on a dump taken from a lab proxy. Torn down in finally.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labApply, labDown, labUnavailable, labUp } from "../../../deploy/lab/mod.ts";
import { netnsPids } from "../../../deploy/lab/host.ts";
import { meshctl } from "../../../meshctl/test_support.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";

const unavailable = labUnavailable();

const TOPOLOGY = `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
workloads:
  - name: web
    namespace: foo
    command: [/usr/bin/python3, -m, http.server, --bind, "$(BIND_IP)", "8080"]
    containerPorts: [8080]
    services: [{name: web, ports: [{name: http, port: 80, targetPort: 8080}]}]
  - {name: client, namespace: bar, command: [sleep, infinity]}
`;

const POLICIES = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: get-only, namespace: foo}
spec:
  selector: {matchLabels: {app: web}}
  rules: [{to: [{operation: {methods: [GET]}}]}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: foo}
spec:
  selector: {matchLabels: {app: web}}
  jwtRules: [{issuer: "https://issuer.example", jwks: '{"keys":[]}'}]
`;

Deno.test(requires(unavailable, {
  name: "meshctl --lab: proxy commands against lab proxies through meshctl's own port-forwards",
  async fn(t) {
    const name = `mc${Deno.pid}`;
    const dir = await Deno.makeTempDir();
    const ctl = (args: string[]) => meshctl(["--lab", name, ...args]);
    try {
      await Deno.writeTextFile(join(dir, "topology.yaml"), TOPOLOGY);
      await Deno.writeTextFile(join(dir, "policies.yaml"), POLICIES);
      const state = await labUp(join(dir, "topology.yaml"), { name, subnet: "10.249.3.0/24" });
      await labApply(name, [join(dir, "policies.yaml")]);

      await t.step("without --lab nothing of the lab is reachable from here", async () => {
        const r = await meshctl(["proxy-config", "cluster", "web.foo", "--debug-address", "127.0.0.1:1"]);
        assert.equal(r.code, 1);
        assert.match(r.err, /cannot reach meshd's debug interface/);
      });

      await t.step("proxy-status: both proxies, every type synced (waits for the policy push)", async () => {
        let r = await ctl(["proxy-status"]);
        for (
          let i = 0;
          i < 50 && !/web-10\.249\.3\.3\.foo\s+Authorization\s+SYNCED\s+\S+\s+\S+\s+0/.test(r.out);
          i++
        ) {
          await new Promise((res) => setTimeout(res, 200));
          r = await ctl(["proxy-status"]);
        }
        assert.equal(r.code, 0, r.err);
        assert.match(r.out, /^NAME\s+TYPE\s+STATUS\s+LAST SENT\s+LAST ACKED\s+NACKS/);
        // Two proxies, six types each (Workload, Service, Authorization, JwtPolicy, RouteConfiguration,
        // TlsCredential), every one in sync.
        assert.equal(r.out.match(/ SYNCED /g)?.length, 12, r.out);
        assert.match(r.out, /client-10\.249\.3\.4\.bar\s+Workload\s+SYNCED/);
        const one = await ctl(["ps", "web.foo"]);
        assert.equal(one.code, 0, one.err);
        assert.match(one.out, /Authorization Match/);
      });

      await t.step(
        "--xds-address meshd.mesh-system.svc: debug over xDS with a token of the lab's CA",
        async () => {
          const http = await ctl(["proxy-status"]);
          const xds = await ctl(["proxy-status", "--xds-address", "meshd.mesh-system.svc"]);
          assert.equal(xds.code, 0, xds.err);
          assert.equal(xds.out, http.out, "the same table as over meshd's debug HTTP interface");
          const one = await ctl(["ps", "web.foo", "--xds-address", "meshd.mesh-system.svc:15012"]);
          assert.equal(one.code, 0, one.err);
          assert.match(one.out, /Authorization Match/);
          const version = await ctl(["version", "--xds-address", "meshd.mesh-system.svc", "-o", "json"]);
          assert.equal(version.code, 0, version.err);
          assert.ok(JSON.parse(version.out).meshVersion, version.out);
          const plain = await ctl([
            "x",
            "internal-debug",
            "syncz",
            "--xds-address",
            "meshd.mesh-system.svc:15010",
            "--plaintext",
          ]);
          assert.equal(
            plain.code,
            1,
            "meshd's plain-text port refuses debug requests without XDS_AUTH_PLAINTEXT",
          );
          assert.match(plain.err, /15010|plain/i);
        },
      );

      await t.step(
        "proxy-config cluster, listener, route, secret, ecds, all, log by lab workload name",
        async () => {
          const clusters = await ctl(["proxy-config", "cluster", "web.foo"]);
          assert.equal(clusters.code, 0, clusters.err);
          assert.match(clusters.out, /web\.foo\.svc\.cluster\.local\s+80\s+-\s+outbound\s+EDS/);
          assert.match(clusters.out, /inbound\|8080\|\|\s+8080\s+-\s+inbound\s+STATIC/);
          const listeners = await ctl(["pc", "listener", "pod/web.foo"]);
          assert.equal(listeners.code, 0, listeners.err);
          assert.match(listeners.out, /10\.249\.3\.3\s+8080/);
          const routes = await ctl(["pc", "route", "client.bar", "-o", "json"]);
          assert.equal(routes.code, 0, routes.err);
          assert.deepEqual(JSON.parse(routes.out), []);
          const secrets = await ctl(["pc", "secret", "client.bar"]);
          assert.equal(secrets.code, 0, secrets.err);
          assert.match(secrets.out, /default\s+Cert Chain\s+ACTIVE\s+true/);
          assert.match(secrets.out, /ROOTCA\s+CA\s+ACTIVE\s+true/);
          // meshd's own name of the proxy works too (the last dot separates the namespace, as in istioctl).
          const registered = await ctl(["pc", "secret", "web-10.249.3.3.foo", "-o", "json"]);
          assert.equal(registered.code, 0, registered.err);
          assert.equal(JSON.parse(registered.out)[1].name, "ROOTCA");
          const ecds = await ctl(["pc", "ecds", "web.foo"]);
          assert.equal(ecds.code, 0, ecds.err);
          assert.equal(ecds.out, "ECDS NAME   TYPE\n");
          const all = await ctl(["pc", "all", "web.foo", "-o", "json"]);
          assert.equal(all.code, 0, all.err);
          const dump = JSON.parse(all.out);
          const mesh = dump.configs.find((c: { "@type": string }) => c["@type"].endsWith("MeshConfigDump"));
          assert.equal(mesh.workload.namespace, "foo");
          assert.deepEqual(Object.keys(mesh.authorizations.resources), ["foo/get-only"]);
          await Deno.writeTextFile(join(dir, "web.dump.json"), all.out);
          const log = await ctl(["pc", "log", "web.foo", "--level", "inbound:debug"]);
          assert.equal(log.code, 0, log.err);
          assert.match(log.out, /^web-10\.249\.3\.3\.foo:\nactive loggers:\n/);
          assert.match(log.out, / {2}inbound: debug\n/);
        },
      );

      await t.step("proxy-stats", async () => {
        const r = await ctl(["x", "proxy-stats", "client.bar"]);
        assert.equal(r.code, 0, r.err);
        assert.match(r.out, /^control_plane\.connected_state: 1$/m);
      });

      await t.step("rootca-compare: two lab proxies share the lab's root", async () => {
        const r = await ctl(["pc", "rootca-compare", "web.foo", "pod/client.bar"]);
        assert.equal(r.code, 0, r.err);
        assert.equal(
          r.out,
          "Both [web.foo] and [client.bar] have the identical ROOTCA, theoretically the connectivity between them is available\n",
        );
      });

      await t.step(
        "authz check on the dump of a lab proxy: the policies and JWT rules it enforces",
        async () => {
          const r = await meshctl(["x", "authz", "check", "-f", join(dir, "web.dump.json")]);
          assert.equal(r.code, 0, r.err);
          assert.match(
            r.out,
            /^Checked workload web-10\.249\.3\.3\.foo \(labels app=web\): 1 AuthorizationPolicies apply/,
          );
          assert.match(r.out, /ALLOW\s+WORKLOAD_SELECTOR\s+get-only\.foo\s+1/);
          assert.match(r.out, /get-only\.foo rule 0: to: methods=\[GET\]\n/);
          assert.match(r.out, /RequestAuthentication foo\/jwt: issuer https:\/\/issuer\.example\n/);
          const denied = await meshctl([
            "x",
            "authz",
            "explain",
            "-f",
            join(dir, "web.dump.json"),
            "--method",
            "POST",
          ]);
          assert.equal(denied.code, 3, denied.err);
          assert.match(denied.out, /^DENY: denied: no rule of ALLOW policies foo\/get-only matched/);
        },
      );

      await t.step("errors name what was not found", async () => {
        const r = await ctl(["pc", "cluster", "nope.foo"]);
        assert.equal(r.code, 1);
        assert.match(
          r.err,
          new RegExp(`nor is it a workload of lab ${name} \\(workloads: web\\.foo, client\\.bar\\)`),
        );
        const down = await meshctl(["--lab", `${name}x`, "ps"]);
        assert.equal(down.code, 1);
        assert.match(down.err, new RegExp(`lab ${name}x is not up`));
      });

      await t.step(
        "meshctl closed its forwards: only the lab's own processes are left in its namespaces",
        async () => {
          for (const netns of [`${name}_meshd`, `${name}_foo_web`, `${name}_bar_client`]) {
            const own = new Set(state.processes.filter((p) => p.netns === netns).map((p) => p.pid));
            // A lab process's own children (meshd's serving children) belong to the lab; a forward's
            // relay, started by meshctl, descends from no lab process.
            const strays = [];
            for (const pid of await netnsPids(netns)) {
              if (!(await descendsFrom(pid, own))) strays.push(pid);
            }
            assert.deepEqual(strays, [], netns);
          }
        },
      );
    } finally {
      await labDown(name);
      await Deno.remove(dir, { recursive: true });
    }
  },
}));

/** Whether `pid` is one of `ancestors` or a descendant of one (read from /proc). */
async function descendsFrom(pid: number, ancestors: ReadonlySet<number>): Promise<boolean> {
  for (let p = pid; p > 1;) {
    if (ancestors.has(p)) return true;
    let stat: string;
    try {
      stat = await Deno.readTextFile(`/proc/${p}/stat`);
    } catch {
      return false;
    }
    // The command name in parentheses may hold spaces: the parent pid is the 2nd field after it.
    p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  }
  return false;
}
