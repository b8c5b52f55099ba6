/**
 * gRPC and h2c apps through the sidecars in the local mesh lab (issue 16 items 4 and 7), under STRICT
 * mTLS, with real clients run in the workloads' namespaces:
 *
 * - grpc-echo in foo with a sidecar: Debian's python3-grpcio server of the HTTP/2 proxy tests
 *   (proxy/h2proxy/grpc_test_app.py, raw-bytes methods), its Service port named `grpc` (9090);
 * - h2c-app in foo with a sidecar: nghttpd --no-tls (nghttp2-server) serving a file, its Service port
 *   named `http2` (8080 → 8081);
 * - sleep in foo and in bar with sidecars: the same grpcio program as client (unary, server and
 *   bidirectional streaming; every call kind, deadlines and large messages are h2mesh's tests on a
 *   loopback proxy pair, not repeated here), `curl --http2-prior-knowledge` and `nghttp`;
 * - an unproxied client in legacy (STRICT: refused).
 *
 * Steps: STRICT: every call and request from both proxied clients succeeds over HTTP/2, the plain
 * client fails; ALLOW principal foo/sleep in foo: bar's gRPC call ends PERMISSION_DENIED (Envoy's
 * gRPC-aware local reply) and its h2c request gets 403; DENY principal foo/sleep: the reverse.
 *
 * Lab `gh<pid>`, subnet 10.226.3.0/24.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labUnavailable } from "../../deploy/lab/mod.ts";
import {
  commandMissing,
  pythonModulesMissing,
  requires,
} from "../../shared/internal/testing/prerequisites.ts";
import {
  inWorkload,
  type RealLab,
  setPolicies,
  strictPeerAuthentication,
  until,
  withRealLab,
} from "./real_software_support.ts";

const unavailable = labUnavailable() ?? pythonModulesMissing(["grpc"], "python3-grpcio") ??
  commandMissing("nghttpd") ?? commandMissing("nghttp");

const GRPC_APP = "proxy/h2proxy/grpc_test_app.py";
const BODY = "hello over h2c\n";

const topology = (dir: string) =>
  `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: grpc-echo
    namespace: foo
    serviceAccount: grpc-echo
    command: [/usr/bin/python3, ${GRPC_APP}, server, "9090"]
    containerPorts: [9090]
    services: [{name: grpc-echo, ports: [{name: grpc, port: 9090}]}]
  - name: h2c-app
    namespace: foo
    serviceAccount: h2c-app
    command: [nghttpd, --no-tls, -a, "$(BIND_IP)", -d, ${join(dir, "htdocs")}, "8081"]
    containerPorts: [8081]
    services: [{name: h2c-app, ports: [{name: http2, port: 8080, targetPort: 8081}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: bar, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
`;

const policy = (name: string, action: string) =>
  `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}, namespace: foo}
spec:
  action: ${action}
  rules: [{from: [{source: {principals: ["cluster.local/ns/foo/sa/sleep"]}}]}]
`;

const FILES = {
  "strict.yaml": strictPeerAuthentication("mesh-system"),
  "allow-foo-sleep.yaml": policy("apps-allow", "ALLOW"),
  "deny-foo-sleep.yaml": policy("apps-deny", "DENY"),
};

/** The grpcio client's outcomes per scenario (grpc_test_app.py's JSON), or `{error}` when it failed. */
async function grpcCalls(
  env: RealLab,
  from: string,
  scenarios: string[],
): Promise<Record<string, Record<string, unknown>>> {
  const r = await inWorkload(
    env,
    from,
    `/usr/bin/python3 ${GRPC_APP} client grpc-echo.foo:9090 grpc-echo.foo:9090 ${scenarios.join(" ")}`,
    40_000,
  );
  try {
    return JSON.parse(r.stdout);
  } catch {
    return { error: { code: `exit ${r.code}`, details: (r.stdout + r.stderr).trim().slice(-300) } };
  }
}

/** The unary call's status name ("OK", "PERMISSION_DENIED", ...), or what else happened. */
async function unaryCode(env: RealLab, from: string): Promise<string> {
  const got = await grpcCalls(env, from, ["unary"]);
  return String((got.unary ?? got.error).code);
}

/** `<status> <http version>` of curl --http2-prior-knowledge to h2c-app.foo, e.g. "200 2". */
async function h2c(env: RealLab, from: string): Promise<string> {
  const r = await inWorkload(
    env,
    from,
    "curl -s --max-time 5 --http2-prior-knowledge -o /dev/null -w '%{http_code} %{http_version}' " +
      "http://h2c-app.foo:8080/index.html",
  );
  return r.stdout || `000 (exit ${r.code})`;
}

type Want = Record<string, { grpc: string; h2c: string }>;

function expectCalls(env: RealLab, want: Want): Promise<number> {
  return until(JSON.stringify(want), async () => {
    const froms = Object.keys(want);
    const got = await Promise.all(
      froms.map(async (f) => ({ grpc: await unaryCode(env, f), h2c: await h2c(env, f) })),
    );
    return froms.every((f, i) => got[i].grpc === want[f].grpc && got[i].h2c === want[f].h2c)
      ? undefined
      : `got ${JSON.stringify(Object.fromEntries(froms.map((f, i) => [f, got[i]])))}`;
  }, 8000);
}

const OK = { grpc: "OK", h2c: "200 2" };

Deno.test(requires(unavailable, {
  name: "e2e: python3-grpcio and h2c (curl, nghttp) through the sidecars under STRICT; ALLOW and DENY",
  async fn(t) {
    await withRealLab("gh", "10.226.3.0/24", topology, FILES, async (env) => {
      await t.step("STRICT: unary and streaming gRPC calls, curl and nghttp over h2c", async () => {
        await setPolicies(env, "strict.yaml");
        env.note("strict", await expectCalls(env, { "foo/sleep": OK, "bar/sleep": OK }));
        for (const from of ["foo/sleep", "bar/sleep"]) {
          const got = await grpcCalls(env, from, [
            "unary",
            "server_stream",
            "client_stream",
            "bidi",
            "large",
          ]);
          assert.deepEqual(got.unary, { reply: "hello", code: "OK" }, from);
          assert.deepEqual(got.server_stream, { count: 100, last: "message-99", code: "OK" }, from);
          assert.deepEqual(got.bidi, { count: 20, last: "echo:19", code: "OK" }, from);
          assert.deepEqual(got.client_stream, { count: 50, bytes: 50000, code: "OK" }, from);
          assert.deepEqual(got.large, { bytes: 4194560, same: true, code: "OK" }, from);
        }
        const body = await inWorkload(
          env,
          "foo/sleep",
          "curl -s --http2-prior-knowledge http://h2c-app.foo:8080/index.html",
        );
        assert.equal(body.stdout, BODY);
        const nghttp = await inWorkload(env, "bar/sleep", "nghttp -v http://h2c-app.foo:8080/index.html");
        assert.equal(nghttp.code, 0, nghttp.stderr);
        assert.match(nghttp.stdout, /:status: 200/);
        assert.ok(nghttp.stdout.includes(BODY), nghttp.stdout.slice(-500));
        const plain = await unaryCode(env, "legacy/sleep");
        assert.notEqual(plain, "OK", "the unproxied client must not reach the app under STRICT");
        assert.match(await h2c(env, "legacy/sleep"), /^000/);
      });

      await t.step("ALLOW principal foo/sleep: bar gets PERMISSION_DENIED and 403", async () => {
        await setPolicies(env, "strict.yaml", "allow-foo-sleep.yaml");
        env.note(
          "allow",
          await expectCalls(env, {
            "foo/sleep": OK,
            "bar/sleep": { grpc: "PERMISSION_DENIED", h2c: "403 2" },
          }),
        );
      });

      await t.step("DENY principal foo/sleep: foo gets PERMISSION_DENIED and 403, bar served", async () => {
        await setPolicies(env, "strict.yaml", "deny-foo-sleep.yaml");
        env.note(
          "deny",
          await expectCalls(env, {
            "foo/sleep": { grpc: "PERMISSION_DENIED", h2c: "403 2" },
            "bar/sleep": OK,
          }),
        );
      });
    }, async (dir) => {
      await Deno.mkdir(join(dir, "htdocs"));
      await Deno.writeTextFile(join(dir, "htdocs", "index.html"), BODY);
    });
  },
}));
