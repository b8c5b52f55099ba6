/**
 * An application's own TLS through the sidecars (issue 16 items 5 and 7), in the local mesh lab under
 * STRICT mTLS:
 *
 * - tls-app in foo with a sidecar: `openssl s_server -www` with its own certificate (a self-signed one
 *   for `tls-app.foo`, made here, nothing to do with the mesh's CA), its Service port named `tls`
 *   (443 → 8443), so both sidecars carry the bytes without reading them;
 * - sleep in foo and sleep in bar with sidecars: `openssl s_client` (and curl) to tls-app.foo:443,
 *   verifying the app's certificate against the app's own CA: end-to-end TLS to the app, through
 *   the mesh's mutual TLS between the sidecars;
 * - an unproxied client in legacy (STRICT: refused).
 *
 * Steps: STRICT: both proxied clients complete the app's handshake (subject CN=tls-app.foo, verify
 * 0) and get s_server's page; the plain client fails. ALLOW principal foo/sleep: bar's handshake fails
 * at once. DENY principal foo/sleep: foo's fails, bar's works.
 *
 * Lab `os<pid>`, subnet 10.226.2.0/24.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labUnavailable, run } from "../../deploy/lab/mod.ts";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import {
  inWorkload,
  type RealLab,
  setPolicies,
  strictPeerAuthentication,
  until,
  withRealLab,
} from "./real_software_support.ts";

const unavailable = labUnavailable() ?? commandMissing("openssl");

/** The app's certificate and key in the test's directory (made before lab up; the topology names them). */
const appCert = (dir: string) => join(dir, "app.crt");
const appKey = (dir: string) => join(dir, "app.key");

const topology = (dir: string) =>
  `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: tls-app
    namespace: foo
    serviceAccount: tls-app
    command: [openssl, s_server, -accept, "$(BIND_IP):8443", -cert, ${appCert(dir)}, -key, ${
    appKey(dir)
  }, -www, -quiet]
    containerPorts: [8443]
    services: [{name: tls-app, ports: [{name: tls, port: 443, targetPort: 8443}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: bar, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
`;

const policy = (name: string, action: string) =>
  `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}, namespace: foo}
spec:
  selector: {matchLabels: {app: tls-app}}
  action: ${action}
  rules: [{from: [{source: {principals: ["cluster.local/ns/foo/sa/sleep"]}}]}]
`;

const FILES = {
  "strict.yaml": strictPeerAuthentication("mesh-system"),
  "allow-foo-sleep.yaml": policy("tls-allow", "ALLOW"),
  "deny-foo-sleep.yaml": policy("tls-deny", "DENY"),
};

/**
 * "verified CN=tls-app.foo" when s_client completed the app's handshake and verified its certificate,
 * "refused" when the handshake failed within 2 s, else what happened.
 */
async function handshake(env: RealLab, from: string): Promise<string> {
  const r = await inWorkload(
    env,
    from,
    `echo | openssl s_client -connect tls-app.foo:443 -servername tls-app.foo -CAfile ${appCert(env.dir)} ` +
      "-verify_return_error 2>&1",
    8000,
  );
  const subject = /subject=\s*CN\s*=\s*(\S+)/.exec(r.stdout)?.[1];
  if (r.code === 0 && /Verify return code: 0 \(ok\)/.test(r.stdout) && subject) {
    return `verified CN=${subject}`;
  }
  if (r.code !== 0) return r.ms < 2000 ? "refused" : `refused slowly (${r.ms} ms)`;
  return `exit ${r.code}: ${r.stdout.split("\n").slice(0, 4).join(" | ")}`;
}

function expectHandshakes(env: RealLab, want: Record<string, string>): Promise<number> {
  return until(JSON.stringify(want), async () => {
    const froms = Object.keys(want);
    const got = await Promise.all(froms.map((f) => handshake(env, f)));
    return froms.every((f, i) => got[i] === want[f])
      ? undefined
      : `got ${JSON.stringify(Object.fromEntries(froms.map((f, i) => [f, got[i]])))}`;
  });
}

/** A self-signed certificate for tls-app.foo (the app's own TLS, not the mesh's) into `dir`. */
async function makeAppCertificate(dir: string): Promise<void> {
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=tls-app.foo",
    "-addext",
    "subjectAltName=DNS:tls-app.foo",
    "-keyout",
    appKey(dir),
    "-out",
    appCert(dir),
  ]);
}

Deno.test(requires(unavailable, {
  name: "e2e: openssl s_client to an openssl s_server app through the sidecars (its own TLS) under STRICT",
  async fn(t) {
    await withRealLab("os", "10.226.2.0/24", topology, FILES, async (env) => {
      await t.step(
        "STRICT: both proxied clients verify the app's own certificate; plain client refused",
        async () => {
          await setPolicies(env, "strict.yaml");
          const ok = "verified CN=tls-app.foo";
          env.note(
            "strict",
            await expectHandshakes(env, { "foo/sleep": ok, "bar/sleep": ok, "legacy/sleep": "refused" }),
          );
          // The app answers over its TLS: s_server's -www page, through both sidecars.
          const page = await inWorkload(
            env,
            "foo/sleep",
            `curl -s --max-time 5 --cacert ${appCert(env.dir)} https://tls-app.foo/`,
          );
          assert.match(page.stdout, /s_server -accept/, `curl: exit ${page.code} ${page.stderr}`);
        },
      );

      await t.step("ALLOW principal foo/sleep: bar's handshake refused", async () => {
        await setPolicies(env, "strict.yaml", "allow-foo-sleep.yaml");
        env.note(
          "allow",
          await expectHandshakes(env, { "foo/sleep": "verified CN=tls-app.foo", "bar/sleep": "refused" }),
        );
      });

      await t.step("DENY principal foo/sleep: foo's handshake refused, bar's verified", async () => {
        await setPolicies(env, "strict.yaml", "deny-foo-sleep.yaml");
        env.note(
          "deny",
          await expectHandshakes(env, { "foo/sleep": "refused", "bar/sleep": "verified CN=tls-app.foo" }),
        );
      });
    }, makeAppCertificate);
  },
}));
