/**
 * TLS passthrough end to end through the local mesh lab (deploy/lab), with real openssl and curl
 * inside the workloads' network namespaces:
 *
 * - Istio's "Ingress Gateway without TLS Termination" task (its Gateway and VirtualService from
 *   tests/fixtures/istio/ingress-sni-passthrough, unchanged): `openssl s_client -servername
 *   nginx.example.com` through the gateway's PASSTHROUGH server reaches the application's own TLS
 *   (`openssl s_server`; subject and SHA-256 fingerprint of its certificate checked, verified with the
 *   task's example.com CA), curl gets its page; an unknown SNI is closed;
 * - the gateway's AuthorizationPolicies on the passed-through port as TCP rules: a DENY on the port
 *   closes, an ALLOW of the client's address admits, an ALLOW of another address closes;
 * - the application's sidecar (inbound TCP on its `https` port): under STRICT an unproxied client's
 *   own TLS is refused, under PERMISSIVE it reaches the app (its ClientHello has no Istio ALPN; the
 *   app's certificate checked) while the proxied clients still come over mutual TLS with their
 *   identities; L4 AuthorizationPolicies by principal and port allow and deny the gateway and a
 *   proxied client;
 * - a sidecar's outbound TLS: curl https to the service's `https` port from a workload with a sidecar
 *   (captured, carried to the service's endpoint as opaque bytes), the app's certificate verified by
 *   curl with its CA; towards an address without a service, a service's SNI is not routed there;
 * - an external host declared by a ServiceEntry of hosts only (`protocol: TLS`, `resolution: DNS`): a
 *   TLS server in another namespace stands in for it; under `outboundTrafficPolicy: REGISTRY_ONLY` the
 *   sidecar closes the captured connection to it (BlackHoleCluster) before the ServiceEntry exists, and
 *   routes it by SNI to the host after; likewise a wildcard host (`*.wild.test`, resolution NONE: to
 *   the address the application dialled).
 *
 * Lab `ts<pid>` on 10.225.0.0/24, mesh config `outboundTrafficPolicy: REGISTRY_ONLY`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labDelete, labUnavailable, workloadOf } from "../../deploy/lab/mod.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import {
  APP_NS,
  apply,
  eventually,
  EXTERNAL_HOST,
  EXTERNAL_SERVICE_ENTRY,
  inWorkload,
  listenersOf,
  sClient,
  SUBNET,
  WILDCARD_DOMAIN,
  WILDCARD_SERVICE_ENTRY,
  withTlsLab,
} from "./lab_tls_passthrough_support.ts";

const TASK = new URL("../fixtures/istio/ingress-sni-passthrough/", import.meta.url).pathname;
const task = (file: string) =>
  Deno.readTextFileSync(join(TASK, file)).replace(/^metadata:\n/gm, `metadata:\n  namespace: ${APP_NS}\n`);
const SUBJECT = "CN = nginx.example.com, O = some organization";

Deno.test(requires(labUnavailable(), {
  name:
    "e2e: TLS passthrough through the lab (gateway PASSTHROUGH task, gateway policies, sidecar SNI, ServiceEntry)",
  fn: (t) =>
    withTlsLab(
      `ts${Deno.pid}`,
      SUBNET,
      "lab_tls_passthrough",
      async ({ lab, dir, certs, state, timings, resolveExternal }) => {
        const ca = join(dir, "example.com.crt");
        const gatewayVip = state.plan!.services.find((s) => s.name === "istio-ingressgateway")!.vip;
        const viaGateway = (sni: string) => sClient(state, "legacy/sleep", `${gatewayVip}:443`, sni, ca);
        // An address with no service where nothing listens on 443 (connections to it are refused at once).
        const nowhere = workloadOf(state, "legacy/sleep").address;

        await t.step(
          "Istio's ingress-sni-passthrough task: the app's own certificate through the gateway",
          async () => {
            const before = await viaGateway("nginx.example.com");
            assert.equal(before.subject, undefined, "no Gateway yet: nothing answers on 443");
            await apply(lab, dir, "gateway.yaml", task("01_gateway_mygateway_passthrough.yaml"));
            await apply(lab, dir, "virtual-service.yaml", task("02_virtual_service_nginx_tls.yaml"));
            const ms = await eventually("s_client through the gateway", async () => {
              const h = await viaGateway("nginx.example.com");
              return h.subject === SUBJECT ? undefined : h.output.slice(-400);
            });
            timings.push(`Gateway and VirtualService applied → passthrough works: ${ms} ms`);
            const h = await viaGateway("nginx.example.com");
            assert.equal(h.code, 0, h.output);
            assert.equal(
              h.fingerprint,
              certs.nginxFingerprint,
              "the application's own certificate, end to end",
            );
            assert.ok(h.verified, "verified with the task's example.com CA");
            const page = await inWorkload(state, "legacy/sleep", [
              "curl",
              "-sS",
              "--resolve",
              `nginx.example.com:443:${gatewayVip}`,
              "--cacert",
              ca,
              "https://nginx.example.com/",
            ]);
            assert.equal(page.code, 0, page.stderr);
            assert.match(page.stdout, /s_server/, "openssl s_server's status page");
            // The gateway's own view: meshctl proxy-config listener on its config dump.
            const listeners = await listenersOf(state, dir, "istio-system/istio-ingressgateway");
            assert.match(
              listeners.stdout,
              new RegExp(
                `8443 .*SNI nginx\\.example\\.com → outbound\\|443\\|\\|my-nginx\\.${APP_NS}\\.svc\\.cluster\\.local`,
              ),
              listeners.stdout + listeners.stderr,
            );
            for (const sni of ["other.example.com", "example.com"]) {
              const other = await viaGateway(sni);
              assert.notEqual(other.code, 0, `SNI ${sni}: closed`);
              assert.equal(other.subject, undefined, `SNI ${sni}: no certificate`);
            }
          },
        );

        await t.step(
          "the gateway's AuthorizationPolicies on the passed-through port (TCP rules)",
          async () => {
            const client = workloadOf(state, "legacy/sleep").address;
            const policy = (action: string, rule: string) =>
              `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: passthrough, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: ${action}
  rules: [${rule}]
`;
            const cases: [string, string, string, boolean][] = [
              ["DENY on the gateway's port", "DENY", `{to: [{operation: {ports: ["8443"]}}]}`, false],
              [
                "ALLOW the client's address",
                "ALLOW",
                `{from: [{source: {ipBlocks: ["${client}/32"]}}]}`,
                true,
              ],
              ["ALLOW another address", "ALLOW", `{from: [{source: {ipBlocks: ["192.0.2.0/24"]}}]}`, false],
            ];
            for (const [name, action, rule, admitted] of cases) {
              await apply(lab, dir, "policy.yaml", policy(action, rule));
              const ms = await eventually(name, async () => {
                const h = await viaGateway("nginx.example.com");
                return (h.subject === SUBJECT) === admitted
                  ? undefined
                  : `handshake ${h.subject ? "done" : "closed"}`;
              });
              timings.push(`${name}: in force after ${ms} ms`);
            }
            await labDelete(lab, ["policy.yaml"]);
            await eventually(
              "no policy",
              async () => (await viaGateway("nginx.example.com")).subject === SUBJECT ? undefined : "closed",
            );
          },
        );

        await t.step(
          "STRICT at the app's sidecar, and its L4 policies on the https port (principals)",
          async () => {
            const gatewayId = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account";
            const sleepId = "cluster.local/ns/foo/sa/sleep";
            const host = `my-nginx.${APP_NS}`;
            const fromSleep = async () =>
              (await sClient(state, "foo/sleep", `${host}:443`, host, ca)).subject === SUBJECT;
            const fromGateway = async () => (await viaGateway("nginx.example.com")).subject === SUBJECT;
            const fromLegacy = async () =>
              (await sClient(state, "legacy/sleep", `${host}:443`, host, ca)).subject === SUBJECT;
            await apply(
              lab,
              dir,
              "strict.yaml",
              `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: ${APP_NS}}
spec: {mtls: {mode: STRICT}}
`,
            );
            const policy = (action: string, principal: string) =>
              `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: nginx, namespace: ${APP_NS}}
spec:
  selector: {matchLabels: {app: my-nginx}}
  action: ${action}
  rules: [{from: [{source: {principals: ["${principal}"]}}], to: [{operation: {ports: ["443"]}}]}]
`;
            const cases: [string, string | undefined, [boolean, boolean, boolean]][] = [
              ["STRICT, no policy: both proxied clients, not the unproxied one", undefined, [
                true,
                true,
                false,
              ]],
              ["ALLOW the gateway's principal on 443", policy("ALLOW", gatewayId), [false, true, false]],
              ["DENY sleep's principal on 443", policy("DENY", sleepId), [false, true, false]],
              ["DENY the gateway's principal on 443", policy("DENY", gatewayId), [true, false, false]],
            ];
            for (const [name, text, want] of cases) {
              if (text !== undefined) await apply(lab, dir, "nginx-policy.yaml", text);
              const ms = await eventually(name, async () => {
                const got = [await fromSleep(), await fromGateway(), await fromLegacy()];
                return JSON.stringify(got) === JSON.stringify(want)
                  ? undefined
                  : `sleep, gateway, legacy: ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;
              });
              timings.push(`${name}: in force after ${ms} ms`);
            }
            await labDelete(lab, ["nginx-policy.yaml", "strict.yaml"]);
            await eventually(
              "no policy",
              async () => (await fromGateway()) ? undefined : "the gateway still refused",
            );
            // PERMISSIVE (the default): the unproxied client's ClientHello offers no Istio ALPN, so the
            // sidecar passes it to the app, whose own certificate it gets (proxy/inbound/README.md).
            const ms = await eventually(
              "PERMISSIVE: the unproxied client reaches the app",
              async () => (await fromLegacy()) ? undefined : "legacy still refused",
            );
            timings.push(`PERMISSIVE, legacy's own TLS to the app: after ${ms} ms`);
            const legacy = await sClient(state, "legacy/sleep", `${host}:443`, host, ca);
            assert.equal(legacy.fingerprint, certs.nginxFingerprint, legacy.output);
            assert.equal(legacy.verified, true, legacy.output);
            // The gateway and sleep still come over mutual TLS with their identities: a DENY of the
            // gateway's principal refuses it and leaves the other two (the unproxied one has no principal).
            await apply(lab, dir, "nginx-policy.yaml", policy("DENY", gatewayId));
            await eventually("PERMISSIVE, DENY the gateway's principal", async () => {
              const got = [await fromSleep(), await fromGateway(), await fromLegacy()];
              return JSON.stringify(got) === JSON.stringify([true, false, true])
                ? undefined
                : `sleep, gateway, legacy: ${JSON.stringify(got)}, want [true,false,true]`;
            });
            await labDelete(lab, ["nginx-policy.yaml"]);
            await eventually(
              "no policy",
              async () => (await fromGateway()) ? undefined : "the gateway still refused",
            );
          },
        );

        await t.step("a sidecar carries the app's own TLS to the service's https port", async () => {
          const host = `my-nginx.${APP_NS}`;
          const r = await inWorkload(state, "foo/sleep", [
            "curl",
            "-sS",
            "-v",
            "--cacert",
            ca,
            `https://${host}/`,
          ]);
          assert.equal(r.code, 0, r.stderr);
          assert.match(r.stdout, /s_server/);
          assert.match(r.stderr, /subject: CN=nginx\.example\.com; O=some organization/);
          const h = await sClient(state, "foo/sleep", `${host}:443`, host, ca);
          assert.equal(h.fingerprint, certs.nginxFingerprint);
          // Captured towards an address without a service, with a service's SNI: not routed to the service
          // (BlackHoleCluster under REGISTRY_ONLY).
          const unknown = await sClient(state, "foo/sleep", `${nowhere}:443`, `my-nginx.${APP_NS}`, ca);
          assert.equal(unknown.subject, undefined, unknown.output);
        });

        await t.step(
          "external hosts declared by ServiceEntries (DNS; a wildcard with NONE), routed by SNI",
          async () => {
            const external = workloadOf(state, "ext/api").address;
            // The proxy resolves the host as the application would: the namespace's hosts file.
            await resolveExternal("foo/sleep");
            const get = () =>
              inWorkload(state, "foo/sleep", [
                "curl",
                "-sS",
                "--cacert",
                join(dir, "external-ca.crt"),
                `https://${EXTERNAL_HOST}/`,
              ]);
            const before = await get();
            assert.notEqual(
              before.code,
              0,
              `REGISTRY_ONLY, no ServiceEntry: BlackHoleCluster; ${before.stderr}`,
            );
            await apply(
              lab,
              dir,
              "service-entry.yaml",
              EXTERNAL_SERVICE_ENTRY,
            );
            const ms = await eventually("the external host through the sidecar", async () => {
              const r = await get();
              return r.code === 0 && /s_server/.test(r.stdout)
                ? undefined
                : `curl exit ${r.code}: ${r.stderr}`;
            });
            timings.push(`ServiceEntry applied → external host reached: ${ms} ms`);
            // A wildcard host with resolution NONE: the original destination, once the SNI matched.
            const wild = () =>
              inWorkload(state, "foo/sleep", [
                "curl",
                "-sS",
                "--resolve",
                `www.${WILDCARD_DOMAIN}:443:${external}`,
                "--cacert",
                join(dir, "external-ca.crt"),
                `https://www.${WILDCARD_DOMAIN}/`,
              ]);
            const blackholed = await wild();
            assert.notEqual(blackholed.code, 0, `no wildcard ServiceEntry yet: ${blackholed.stdout}`);
            await apply(
              lab,
              dir,
              "service-entry-wildcard.yaml",
              WILDCARD_SERVICE_ENTRY,
            );
            await eventually("a wildcard ServiceEntry host through the sidecar", async () => {
              const r = await wild();
              return r.code === 0 && /s_server/.test(r.stdout)
                ? undefined
                : `curl exit ${r.code}: ${r.stderr}`;
            });
          },
        );
      },
    ),
}));
