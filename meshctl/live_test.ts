/**
 * meshctl's live commands against the real meshd and two real proxies on loopback: proxy-config,
 * proxy-status, proxy-stats, analyze on the live config, admin log, version, internal-debug and
 * workload entry configure. One mesh for all steps (starting it takes seconds).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import {
  freePort,
  liveMeshConfig,
  type LiveMeshd,
  type LiveProxy,
  meshctl,
  startLiveMeshd,
  startLiveProxy,
} from "./test_support.ts";

const HTTP_PORT = freePort();
const TCP_PORT = freePort();
const UNBOUND_PORT = freePort();

const CONFIG = liveMeshConfig({ http: HTTP_PORT, tcp: TCP_PORT, unbound: UNBOUND_PORT });

Deno.test("meshctl live: against meshd and two proxies", async (t) => {
  const meshd: LiveMeshd = await startLiveMeshd(CONFIG);
  const proxies: LiveProxy[] = [];
  const ctl = (args: string[]) => meshctl([...args, "--debug-address", meshd.debugAddress]);
  try {
    proxies.push(
      await startLiveProxy(meshd, {
        namespace: "foo",
        name: "httpbin-1",
        serviceAccount: "httpbin",
        ip: "10.1.0.2",
        inbound: [HTTP_PORT, TCP_PORT],
      }),
      await startLiveProxy(meshd, {
        namespace: "foo",
        name: "sleep-1",
        serviceAccount: "sleep",
        ip: "10.1.0.3",
        inbound: [],
      }),
    );

    await t.step("proxy-config listener: short table with the mTLS mode per port; json; yaml", async () => {
      const r = await ctl(["proxy-config", "listener", "httpbin-1.foo"]);
      assert.equal(r.code, 0, r.err);
      const lines = r.out.trim().split("\n");
      assert.match(
        lines[0],
        /^ADDRESSES\s+PORT\s+DIRECTION\s+PROTOCOL\s+MTLS\s+PATH NORMALIZATION\s+DESTINATION$/,
      );
      assert.ok(
        lines.some((l) =>
          new RegExp(
            `^127\\.0\\.0\\.1\\s+${HTTP_PORT}\\s+INBOUND\\s+HTTP\\s+STRICT\\s+DECODE_AND_MERGE_SLASHES\\s+inbound\\|${HTTP_PORT}\\|\\|$`,
          )
            .test(l)
        ),
        r.out,
      );
      assert.ok(
        lines.some((l) =>
          new RegExp(`^127\\.0\\.0\\.1\\s+${TCP_PORT}\\s+INBOUND\\s+TCP\\s+DISABLE\\s`).test(l)
        ),
        r.out,
      );
      const json = await ctl([
        "proxy-config",
        "listener",
        "httpbin-1.foo",
        "-o",
        "json",
        "--port",
        String(TCP_PORT),
      ]);
      const listeners = JSON.parse(json.out);
      assert.equal(listeners.length, 1);
      assert.deepEqual(listeners[0].mtls, { mode: "DISABLE", policy: "foo/httpbin", scope: "port" });
      // Decided from the service port (shared/protocol); the inbound data path carries it as TCP.
      assert.deepEqual(listeners[0].protocol, {
        selected: "TCP",
        services: ["foo/httpbin port 5432 (TCP)"],
        carried: "TCP",
      });
      const yaml = await ctl([
        "proxy-config",
        "listeners",
        "pod/httpbin-1.foo",
        "-o",
        "yaml",
        "--type",
        "outbound",
      ]);
      assert.equal(parseYaml(yaml.out)[0].traffic_direction, "OUTBOUND");
      const verbose = await ctl(["pc", "l", "httpbin-1", "-n", "foo", "--verbose"]);
      assert.match(verbose.out, /POLICY\s+SCOPE\s+PROTOCOL FROM/);
      assert.match(verbose.out, /foo\/httpbin port 8000 \(HTTP\)/);
      assert.match(verbose.out, /foo\/httpbin\s+workload/);
    });

    await t.step("proxy-config cluster and endpoint: filters, identity for mutual TLS", async () => {
      const r = await ctl(["proxy-config", "cluster", "sleep-1.foo", "--fqdn", "httpbin", "--port", "5432"]);
      assert.equal(r.code, 0, r.err);
      assert.equal(
        r.out.trim().split("\n").map((l) => l.split(/\s{3,}/).join("|")).join("\n"),
        "SERVICE FQDN|PORT|SUBSET|DIRECTION|TYPE|DESTINATION RULE\nhttpbin.foo.svc.cluster.local|5432|-|outbound|EDS|-",
      );
      const ep = await ctl([
        "proxy-config",
        "endpoint",
        "sleep-1.foo",
        "--cluster",
        "outbound|8000||httpbin.foo.svc.cluster.local",
      ]);
      assert.match(
        ep.out,
        new RegExp(
          `^10\\.1\\.0\\.2:${HTTP_PORT}\\s+HEALTHY\\s+OK\\s+outbound\\|8000\\|\\|httpbin\\.foo\\.svc\\.cluster\\.local\\s+spiffe://cluster\\.local/ns/foo/sa/httpbin$`,
          "m",
        ),
      );
      const none = await ctl([
        "proxy-config",
        "endpoint",
        "sleep-1.foo",
        "--status",
        "unhealthy",
        "-o",
        "json",
      ]);
      assert.deepEqual(JSON.parse(none.out), []);
    });

    await t.step("proxy-config secret, bootstrap, route, all; a saved dump with --file", async () => {
      const s = await ctl(["proxy-config", "secret", "httpbin-1.foo"]);
      assert.match(s.out, /^default\s+Cert Chain\s+ACTIVE\s+true\s+[0-9a-f]+\s+\d{4}-/m);
      assert.match(s.out, /^ROOTCA\s+CA\s+ACTIVE\s+true\s/m);
      const b = await ctl(["proxy-config", "bootstrap", "httpbin-1.foo"]);
      assert.equal(JSON.parse(b.out).node.id, "sidecar~10.1.0.2~httpbin-1.foo~foo.svc.cluster.local");
      const bs = await ctl(["proxy-config", "bootstrap", "httpbin-1.foo", "-o", "short"]);
      assert.match(
        bs.out,
        /^Node: sidecar~10\.1\.0\.2~httpbin-1\.foo~foo\.svc\.cluster\.local\nDiscovery: 127\.0\.0\.1:\d+ \(mutual TLS\)/,
      );
      const routes = await ctl(["proxy-config", "route", "httpbin-1.foo"]);
      assert.equal(routes.out, "NAME   VHOST NAME   DOMAINS   MATCH   VIRTUAL SERVICE\n");
      const dumpFile = join(meshd.dir, "dump.json");
      const all = await ctl(["proxy-config", "all", "httpbin-1.foo", "-o", "json"]);
      await Deno.writeTextFile(dumpFile, all.out);
      const offline = await meshctl(["proxy-config", "listener", "-f", dumpFile]);
      const live = await ctl(["proxy-config", "listener", "httpbin-1.foo"]);
      assert.equal(offline.out, live.out);
      const allShort = await ctl(["proxy-config", "all", "httpbin-1.foo"]);
      for (const h of ["SERVICE FQDN", "ADDRESSES", "ENDPOINT", "VHOST NAME", "RESOURCE NAME"]) {
        assert.match(allShort.out, new RegExp(h));
      }
    });

    await t.step("proxy-config log: read, set one logger, set all, reset", async () => {
      const read = await ctl(["proxy-config", "log", "httpbin-1.foo"]);
      assert.ok(read.out.startsWith("httpbin-1.foo:\nactive loggers:\n  admin: warning\n"), read.out);
      const one = await ctl([
        "proxy-config",
        "log",
        "httpbin-1.foo",
        "--level",
        "inbound:debug",
        "-o",
        "json",
      ]);
      assert.equal(JSON.parse(one.out).inbound, "debug");
      const all = await ctl(["proxy-config", "log", "httpbin-1.foo", "--level", "error", "-o", "yaml"]);
      assert.ok(Object.values(parseYaml(all.out)).every((l) => l === "error"), all.out);
      const reset = await ctl(["proxy-config", "log", "httpbin-1.foo", "--reset"]);
      assert.doesNotMatch(reset.out, /: (error|debug)$/m);
      const bad = await ctl(["proxy-config", "log", "httpbin-1.foo", "--level", "inbound:loud"]);
      assert.equal(bad.code, 1);
      assert.match(bad.err, /--level: unknown level "loud" in "inbound:loud"/);
    });

    await t.step("proxy-config: errors name what was not found", async () => {
      const missing = await ctl(["proxy-config", "listener", "nope.foo"]);
      assert.equal(missing.code, 1);
      assert.match(
        missing.err,
        /proxy nope\.foo not found: no proxy of workload foo\/nope is connected to meshd at 127\.0\.0\.1:\d+ \(connected: httpbin-1\.foo, sleep-1\.foo\)/,
      );
      const file = await meshctl(["proxy-config", "cluster", "-f", "/nonexistent.json"]);
      assert.match(file.err, /--file \/nonexistent\.json: no such file/);
      const none = await meshctl(["proxy-config", "cluster"]);
      assert.match(none.err, /cluster needs a proxy, \[<type>\/\]<name>\[\.<namespace>\], or --file/);
      const port = await ctl(["proxy-config", "cluster", "httpbin-1.foo", "--proxy-admin-port", "1"]);
      assert.match(
        port.err,
        /cannot reach the admin interface of proxy httpbin-1\.foo \(sidecar~10\.1\.0\.2~httpbin-1\.foo~foo\.svc\.cluster\.local\) at 127\.0\.0\.1:1/,
      );
    });

    await t.step("proxy-status: last sent and acked per proxy and type; diff for one proxy", async () => {
      const r = await ctl(["proxy-status"]);
      assert.equal(r.code, 0, r.err);
      const rows = r.out.trim().split("\n").slice(1).map((l) => l.split(/\s{3,}/));
      assert.equal(rows.length, 12, r.out);
      for (const row of rows) {
        assert.equal(row[2], "SYNCED", r.out);
        assert.equal(row[3], row[4], "last sent is last acked");
      }
      assert.deepEqual(rows.filter((x) => x[0] === "httpbin-1.foo").map((x) => x[1]), [
        "Authorization",
        "JwtPolicy",
        "RouteConfiguration",
        "Service",
        "TlsCredential",
        "Workload",
      ]);
      const json = await ctl(["ps", "-o", "json"]);
      assert.equal(JSON.parse(json.out).length, 12);
      const diff = await ctl(["proxy-status", "httpbin-1.foo"]);
      assert.equal(
        diff.out,
        "Workload Match\nService Match\nAuthorization Match\nJwtPolicy Match\nRouteConfiguration Match\nTlsCredential Match\n",
      );
      // A dump from another proxy differs from what meshd sends httpbin-1.
      const other = join(meshd.dir, "sleep.json");
      await Deno.writeTextFile(other, (await ctl(["proxy-config", "all", "sleep-1.foo", "-o", "json"])).out);
      const d = await ctl(["proxy-status", "httpbin-1.foo", "-f", other]);
      assert.match(d.out, /^Workload Don't Match \(- meshd, \+ proxy\)\n/);
      assert.match(d.out, /^- {3}"name": "httpbin-1",\n\+ {3}"name": "sleep-1",$/m);
      assert.match(d.out, /^Authorization Don't Match/m);
      assert.match(d.out, /^Service Match$/m);
      const x = await ctl(["x", "ps", "nope.foo"]);
      assert.match(x.err, /proxy nope\.foo not found/);
    });

    await t.step("experimental proxy-stats: short, json, yaml, prom, --type clusters", async () => {
      const short = await ctl(["x", "proxy-stats", "httpbin-1.foo"]);
      assert.match(short.out, /^server\.concurrency: 1$/m);
      const json = JSON.parse((await ctl(["x", "es", "httpbin-1.foo", "-o", "json"])).out);
      assert.ok(json.stats.some((s: { name: string }) => s.name === "server.live"));
      const yaml = parseYaml((await ctl(["x", "es", "httpbin-1.foo", "-o", "yaml"])).out);
      const names = (v: { stats: { name: string }[] }) => v.stats.map((x) => x.name);
      assert.deepEqual(names(yaml), names(json), "the same statistics (values such as uptime move)");
      const prom = await ctl(["x", "es", "httpbin-1.foo", "-o", "prom"]);
      assert.match(prom.out, /^# TYPE envoy_server_live gauge\nenvoy_server_live 1$/m);
      const clusters = await ctl(["x", "es", "httpbin-1.foo", "--type", "clusters"]);
      assert.ok(
        clusters.out.split("\n").filter((l) => l).every((l) => l.startsWith("cluster.")),
        clusters.out,
      );
      const promClusters = await ctl(["x", "es", "httpbin-1.foo", "--type", "clusters", "-o", "prom"]);
      assert.doesNotMatch(promClusters.out, /envoy_server/);
      const merged = await ctl(["x", "es", "httpbin-1.foo", "-o", "prom-merged"]);
      assert.equal(merged.code, 1);
      assert.match(merged.err, /prom-merged is not available/);
    });

    await t.step("analyze on meshd's live config; files simulate extra config", async () => {
      const r = await ctl(["analyze", "-o", "json"]);
      assert.equal(r.code, 0, r.err);
      const codes = JSON.parse(r.out).map((m: { code: string; origin: string }) => `${m.code} ${m.origin}`)
        .sort();
      assert.deepEqual(codes, [
        "MESH0001 PeerAuthentication foo/httpbin",
        "MESH0002 AuthorizationPolicy foo/get-only",
      ]);
      const file = join(meshd.dir, "extra.yaml");
      await Deno.writeTextFile(
        file,
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: get-only, namespace: foo}\nspec: {selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: [GET], ports: ['" +
          HTTP_PORT + "']}}]}]}\n",
      );
      const overlay = await ctl(["analyze", "-o", "json", file]);
      assert.deepEqual(JSON.parse(overlay.out).map((m: { code: string }) => m.code), ["MESH0001"]);
    });

    await t.step("admin log: read, set a scope, stack traces, reset, formats, unknown scope", async () => {
      const ctrlz = ["--ctrlz_port", String(meshd.ports.ctrlz)];
      const read = await ctl(["admin", "log", ...ctrlz]);
      assert.equal(read.code, 0, read.err);
      assert.match(read.out, /^ACTIVE SCOPE\s+OUTPUT LEVEL\s+STACK TRACE LEVEL\n/);
      assert.match(read.out, /^ads\s+info\s+none$/m);
      const set = await ctl([
        "admin",
        "l",
        ...ctrlz,
        "--level",
        "ads:debug,ca:warn",
        "--stack-trace-level",
        "ads:error",
        "-o",
        "json",
      ]);
      const scopes = JSON.parse(set.out) as {
        name: string;
        output_level: string;
        stack_trace_level: string;
      }[];
      assert.deepEqual(scopes.find((x) => x.name === "ads"), {
        name: "ads",
        output_level: "debug",
        stack_trace_level: "error",
        log_callers: false,
      });
      assert.equal(scopes.find((x) => x.name === "ca")?.output_level, "warn");
      const reset = await ctl(["meshd", "log", ...ctrlz, "--reset", "-o", "yaml"]);
      assert.ok((parseYaml(reset.out) as { output_level: string }[]).every((x) => x.output_level === "info"));
      const unknown = await ctl(["admin", "log", ...ctrlz, "--level", "nope:debug"]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.err, /scope "nope" not found in meshd at 127\.0\.0\.1:\d+/);
      const badLevel = await ctl(["admin", "log", ...ctrlz, "--level", "ads:loud"]);
      assert.match(
        badLevel.err,
        /--level: unknown level "loud" in "ads:loud"; levels: none, error, warn, info, debug/,
      );
    });

    await t.step("version: client and meshd, short, full, json, yaml; experimental version", async () => {
      const short = await ctl(["version"]);
      assert.match(short.out, /^client version: (\d+\.\d+\.\d+)\ncontrol plane version: \1\n$/);
      const json = JSON.parse((await ctl(["version", "-o", "json"])).out);
      assert.equal(json.meshVersion[0].Component, "meshd");
      assert.equal(json.meshVersion[0].Info.deno, json.clientVersion.deno);
      const yaml = parseYaml((await ctl(["x", "version", "-o", "yaml"])).out);
      assert.deepEqual(yaml, json);
      const full = await ctl(["version", "--short=false"]);
      assert.match(full.out, /^meshd component: meshd$/m);
    });

    await t.step("experimental internal-debug: meshd's debug endpoints", async () => {
      const syncz = JSON.parse((await ctl(["x", "internal-debug", "syncz"])).out);
      assert.equal(syncz.length, 2);
      const dump = JSON.parse((await ctl(["x", "internal-debug", "config_dump?proxyID=foo/httpbin-1"])).out);
      assert.equal(dump.proxy, "sidecar~10.1.0.2~httpbin-1.foo~foo.svc.cluster.local");
      const missing = await ctl(["x", "internal-debug", "nope"]);
      assert.equal(missing.code, 1);
      assert.match(missing.err, /\/debug\/nope: 404: no debug page "nope"; pages: syncz, configz/);
    });

    await t.step(
      "experimental workload entry configure: from meshd's config or a WorkloadGroup file",
      async () => {
        const out = join(meshd.dir, "vm");
        const r = await ctl([
          "x",
          "workload",
          "entry",
          "configure",
          "--name",
          "vm",
          "-n",
          "foo",
          "-o",
          out,
          "--internalIP",
          "10.1.0.9",
          "--autoregister",
          "--ingressIP",
          "192.0.2.1",
        ]);
        assert.equal(r.code, 0, r.err);
        assert.match(
          r.err,
          /wrote cluster\.env, mesh\.yaml, root-cert\.pem, mesh-token, hosts to .* for WorkloadGroup foo\/vm/,
        );
        const env = await Deno.readTextFile(join(out, "cluster.env"));
        assert.match(env, /^POD_NAMESPACE=foo$/m);
        assert.match(env, /^SERVICE_ACCOUNT=vmsa$/m);
        assert.match(env, /^INSTANCE_IP=10\.1\.0\.9$/m);
        assert.match(env, /^MESH_META_AUTO_REGISTER_GROUP=vm$/m);
        assert.match(
          env,
          /^MESH_PROXY_ARGS='--discoveryAddress=meshd\.mesh-system\.svc:15012 --namespace=foo --serviceAccount=vmsa --workloadGroup=vm --labels=app=vm /m,
        );
        assert.deepEqual(
          parseYaml(await Deno.readTextFile(join(out, "mesh.yaml"))).rootNamespace,
          "mesh-system",
        );
        assert.equal(await Deno.readTextFile(join(out, "hosts")), "192.0.2.1 meshd.mesh-system.svc\n");
        const token = await Deno.readTextFile(join(out, "mesh-token"));
        const claims = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
        assert.equal(claims.sub, "system:serviceaccount:foo:vmsa");
        assert.equal(claims.exp - claims.iat, 3600);
        assert.match(await Deno.readTextFile(join(out, "root-cert.pem")), /^-----BEGIN CERTIFICATE-----/);
        const fromFile = join(meshd.dir, "wg.yaml");
        await Deno.writeTextFile(
          fromFile,
          (await meshctl(["x", "workload", "group", "create", "--name", "vm2", "-n", "bar", "-s", "sa2"]))
            .out,
        );
        const r2 = await ctl([
          "x",
          "workload",
          "entry",
          "configure",
          "-f",
          fromFile,
          "-o",
          join(meshd.dir, "vm2"),
          "--tokenDuration",
          "60",
        ]);
        assert.equal(r2.code, 0, r2.err);
        assert.match(
          await Deno.readTextFile(join(meshd.dir, "vm2", "cluster.env")),
          /^SERVICE_ACCOUNT=sa2$/m,
        );
        const none = await ctl([
          "x",
          "workload",
          "entry",
          "configure",
          "--name",
          "nope",
          "-n",
          "foo",
          "-o",
          out,
        ]);
        assert.match(none.err, /WorkloadGroup foo\/nope not found in meshd's config at 127\.0\.0\.1:\d+/);
      },
    );

    await t.step("every output format of every command: json and yaml carry the same data", async () => {
      const ctrlz = ["--ctrlz_port", String(meshd.ports.ctrlz)];
      const structured = ["short", "json", "yaml"];
      const table: [args: string[], formats: string[]][] = [
        ...["all", "bootstrap", "cluster", "endpoint", "listener", "route", "secret", "log", "ecds"].map((
          sub,
        ): [string[], string[]] => [["proxy-config", sub, "httpbin-1.foo"], structured]),
        [["proxy-status"], structured],
        [["x", "proxy-stats", "httpbin-1.foo"], [...structured, "prom"]],
        [["x", "authz", "check", "httpbin-1.foo"], structured],
        [["analyze"], ["log", "json", "yaml"]],
        [["admin", "log", ...ctrlz], structured],
        [["version"], ["json", "yaml"]],
      ];
      for (const [args, formats] of table) {
        const parsed: Record<string, unknown> = {};
        for (const format of formats) {
          const r = await ctl([...args, "-o", format]);
          const what = `meshctl ${args.join(" ")} -o ${format}`;
          assert.ok(r.code === 0 || (args[0] === "analyze" && r.code === 79), `${what}: ${r.err}`);
          assert.notEqual(r.out.trim(), "", `${what}: empty`);
          if (format === "json") parsed.json = JSON.parse(r.out);
          else if (format === "yaml") parsed.yaml = parseYaml(r.out);
          else if (format === "prom") assert.match(r.out, /^# TYPE \S+ (counter|gauge)$/m, what);
          else assert.doesNotMatch(r.out.trimStart(), /^[{[]/, `${what}: a table or text, not JSON`);
        }
        if ("json" in parsed && "yaml" in parsed) {
          // Counters move between two runs: for stats only the shape must agree.
          const comparable = (v: unknown) =>
            args[1] === "proxy-stats" ? JSON.stringify(v, (_, x) => typeof x === "number" ? 0 : x) : v;
          assert.deepEqual(
            comparable(parsed.yaml),
            comparable(parsed.json),
            `meshctl ${args.join(" ")}: yaml and json differ`,
          );
        }
      }
    });
  } finally {
    for (const p of proxies) await p.stop();
    await meshd.stop();
  }
});
