/**
 * Istio's "Authorization for TCP traffic" task (istio.io/latest/docs/tasks/security/authorization/authz-tcp/)
 * replayed through the local mesh lab, with the task's AuthorizationPolicy YAML as Istio gives it:
 *
 * - tcp-echo in foo with a sidecar: a stand-in for Istio's tcp-echo-server (apps/tcp_echo_server.py,
 *   "hello " + each line) listening on 9000, 9001 and 9002; its Service declares 9000 (`tcp`) and 9001
 *   (`tcp-other`) only, so 9002 is reached at the pod's address (the task's `$TCP_ECHO_IP`);
 * - sleep in foo with a sidecar, the task's client: `echo "port 9000" | nc tcp-echo 9000` (ncat, which
 *   half-closes after its input, so the echo server's close ends it: half-close passes the pair);
 * - an unproxied client in legacy, to show that STRICT covers these TCP ports.
 *
 * Steps: the task's "before you begin" (all three ports answer); its ALLOW on ports 9000/9001 (9002
 * rejected); STRICT mTLS in foo under that ALLOW (sleep still answered, the plain-text client reset); the
 * ALLOW with `methods: ["GET"]` (an HTTP-only field: the rule is dropped, 9000 and 9001 rejected); the
 * DENY with methods only (HTTP parts ignored: everything rejected); the DENY with methods on 9000 (9000
 * rejected, 9001 answered). meshd's log and `meshctl analyze` warn about the last three. A rejected
 * connection must be closed at once (no answer, well under the client's timeout).
 *
 * Lab `at<pid>`, subnet 10.226.0.0/24.
 *
 * @module
 */
import assert from "node:assert/strict";
import { labUnavailable, workloadOf } from "../../deploy/lab/mod.ts";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { runMeshctl } from "./e2e_support.ts";
import {
  inWorkload,
  meshdLog,
  type RealLab,
  setPolicies,
  strictPeerAuthentication,
  until,
  withRealLab,
} from "./real_software_support.ts";

const unavailable = labUnavailable() ?? commandMissing("ncat");

const TOPOLOGY = `namespaces:
  - {name: foo, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: tcp-echo
    namespace: foo
    labels: {app: tcp-echo, version: v1}
    command: [/usr/bin/python3, tests/e2e/apps/tcp_echo_server.py, hello, "9000", "9001", "9002"]
    containerPorts: [9000, 9001, 9002]
    services: [{name: tcp-echo, ports: [{name: tcp, port: 9000}, {name: tcp-other, port: 9001}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
`;

/** The task's policies, as Istio's page gives them (snips.sh of istio.io). */
const ALLOW_PORTS = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: tcp-policy
  namespace: foo
spec:
  selector:
    matchLabels:
      app: tcp-echo
  action: ALLOW
  rules:
  - to:
    - operation:
        ports: ["9000", "9001"]
`;
const ALLOW_GET_9000 = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: tcp-policy
  namespace: foo
spec:
  selector:
    matchLabels:
      app: tcp-echo
  action: ALLOW
  rules:
  - to:
    - operation:
        methods: ["GET"]
        ports: ["9000"]
`;
const DENY_GET = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: tcp-policy
  namespace: foo
spec:
  selector:
    matchLabels:
      app: tcp-echo
  action: DENY
  rules:
  - to:
    - operation:
        methods: ["GET"]
`;
const DENY_GET_9000 = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: tcp-policy
  namespace: foo
spec:
  selector:
    matchLabels:
      app: tcp-echo
  action: DENY
  rules:
  - to:
    - operation:
        methods: ["GET"]
        ports: ["9000"]
`;

const FILES = {
  // One file name for the four versions of tcp-policy: each step replaces it, as kubectl apply does.
  "allow-ports.yaml": ALLOW_PORTS,
  "allow-get-9000.yaml": ALLOW_GET_9000,
  "deny-get.yaml": DENY_GET,
  "deny-get-9000.yaml": DENY_GET_9000,
  "strict-foo.yaml": strictPeerAuthentication("foo"),
};

/** The task's check: "succeeded" when the reply has "hello port <port>", else "rejected" (with why). */
async function echo(env: RealLab, from: string, port: number): Promise<string> {
  const host = port === 9002 ? workloadOf(env.state, "foo/tcp-echo").address : "tcp-echo";
  const r = await inWorkload(env, from, `echo "port ${port}" | ncat -w 3 ${host} ${port}`, 8000);
  if (r.stdout.includes(`hello port ${port}`)) return "succeeded";
  // A rejection must be a close at once, not a hang until the client gives up.
  if (r.ms > 3000) return `rejected slowly (${r.ms} ms, exit ${r.code})`;
  return "rejected";
}

type Want = Record<string, string>;

/** Polls until each `from port` probe of `want` (e.g. "foo/sleep 9000") gives its outcome; returns ms. */
function expect(env: RealLab, want: Want, timeoutMs = 5000): Promise<number> {
  return until(JSON.stringify(want), async () => {
    const keys = Object.keys(want);
    const got = await Promise.all(keys.map((k) => {
      const [from, port] = k.split(" ");
      return echo(env, from, Number(port));
    }));
    return keys.every((k, i) => got[i] === want[k])
      ? undefined
      : `got ${JSON.stringify(Object.fromEntries(keys.map((k, i) => [k, got[i]])))}`;
  }, timeoutMs);
}

/** Waits until meshd's log has the warning for tcp-policy's rule 0 (`methods`), saying `effect`. */
function expectMeshdWarning(env: RealLab, action: string, effect: RegExp): Promise<number> {
  const want = `AuthorizationPolicy foo/tcp-policy (${action}) spec.rules[0] has HTTP-only fields ` +
    "(to[0].operation.methods) and applies to workload ";
  return until(`meshd warns "${want}"`, async () => {
    const line = (await meshdLog(env)).split("\n").find((l) => l.includes(want));
    if (line === undefined) return "no such line yet";
    if (!effect.test(line)) return `the line does not say it: ${line}`;
    return undefined;
  });
}

/** `meshctl --lab <lab> analyze -o json`: the MESH0002 messages, "<origin>: <text>". */
async function analyzeMesh0002(env: RealLab): Promise<string[]> {
  const r = await runMeshctl(["--lab", env.lab, "analyze", "-o", "json"]);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { code: string; origin: string; message: string }[])
    .filter((m) => m.code === "MESH0002").map((m) => `${m.origin}: ${m.message}`);
}

Deno.test(requires(unavailable, {
  name: "e2e: Istio's authz-tcp task (tcp-echo on 9000/9001/9002, the task's YAML) under STRICT mTLS",
  async fn(t) {
    await withRealLab("at", "10.226.0.0/24", TOPOLOGY, FILES, async (env) => {
      await t.step("before you begin: 9000, 9001 (service) and 9002 (pod address) answer", async () => {
        env.note(
          "all answer",
          await expect(env, {
            "foo/sleep 9000": "succeeded",
            "foo/sleep 9001": "succeeded",
            "foo/sleep 9002": "succeeded",
          }),
        );
      });

      await t.step("ALLOW ports 9000, 9001: 9002 rejected (the pass-through port too)", async () => {
        await setPolicies(env, "allow-ports.yaml");
        env.note(
          "allow ports",
          await expect(env, {
            "foo/sleep 9000": "succeeded",
            "foo/sleep 9001": "succeeded",
            "foo/sleep 9002": "rejected",
          }),
        );
      });

      await t.step(
        "STRICT in foo under that ALLOW: sleep (mTLS) still answered, plain text reset",
        async () => {
          await setPolicies(env, "allow-ports.yaml", "strict-foo.yaml");
          env.note(
            "strict",
            await expect(env, {
              "legacy/sleep 9000": "rejected",
              "foo/sleep 9000": "succeeded",
              "foo/sleep 9001": "succeeded",
            }),
          );
        },
      );

      await t.step(
        "ALLOW with methods: [GET] on 9000: the rule is dropped, 9000 and 9001 rejected",
        async () => {
          await setPolicies(env, "allow-get-9000.yaml", "strict-foo.yaml");
          env.note(
            "allow GET",
            await expect(env, { "foo/sleep 9000": "rejected", "foo/sleep 9001": "rejected" }),
          );
          await expectMeshdWarning(
            env,
            "ALLOW",
            /foo\/tcp-echo-\S+ ports 9000 \(TCP\), 9001 \(TCP\): the rule is dropped/,
          );
          const msgs = await analyzeMesh0002(env);
          assert.equal(msgs.length, 1, msgs.join("\n"));
          assert.match(
            msgs[0],
            /^AuthorizationPolicy foo\/tcp-policy: rule 0 uses HTTP-only fields \(to\[0\]\.operation\.methods\) but applies to TCP port 9000 of foo\/tcp-echo-.*: an ALLOW rule with HTTP-only fields is dropped on TCP/,
          );
        },
      );

      await t.step("DENY with methods only: HTTP parts ignored, so it denies 9000 and 9001", async () => {
        await setPolicies(env, "deny-get.yaml", "strict-foo.yaml");
        env.note(
          "deny GET",
          await expect(env, { "foo/sleep 9000": "rejected", "foo/sleep 9001": "rejected" }),
        );
        await expectMeshdWarning(
          env,
          "DENY",
          /foo\/tcp-echo-\S+ ports 9000 \(TCP\), 9001 \(TCP\): those fields are ignored/,
        );
      });

      await t.step("DENY with methods on 9000: 9000 rejected, 9001 answered", async () => {
        await setPolicies(env, "deny-get-9000.yaml", "strict-foo.yaml");
        env.note(
          "deny GET 9000",
          await expect(env, { "foo/sleep 9000": "rejected", "foo/sleep 9001": "succeeded" }),
        );
        const msgs = await analyzeMesh0002(env);
        assert.ok(msgs.length >= 1, "MESH0002 for the DENY rule");
        assert.ok(msgs.every((m) => m.startsWith("AuthorizationPolicy foo/tcp-policy: ")), msgs.join("\n"));
        assert.ok(
          msgs.some((m) =>
            /port 9000 .*: the HTTP-only fields are ignored on TCP, so this DENY rule matches every connection/
              .test(m)
          ),
          msgs.join("\n"),
        );
      });

      await t.step("clean up (policy deleted): 9000 answers again", async () => {
        await setPolicies(env, "strict-foo.yaml");
        env.note(
          "deleted",
          await expect(env, { "foo/sleep 9000": "succeeded", "foo/sleep 9001": "succeeded" }),
        );
      });
    });
  },
}));
