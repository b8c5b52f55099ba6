/**
 * VirtualService `tls` rules bound to mesh, applied by a sidecar, end to end through the local mesh lab
 * (deploy/lab) with real `openssl s_client` inside the client's network namespace, the topology of
 * ./lab_tls_passthrough_support.ts (an `openssl s_server` app `my-nginx` with a sidecar, a TLS server
 * standing in for an external host, REGISTRY_ONLY):
 *
 * - the pattern of Istio's "Egress gateways for HTTPS traffic" task: a ServiceEntry of the external
 *   host (TLS 443, DNS), then a VirtualService whose `tls` rule (gateways [mesh], port 443, sniHosts
 *   [the host]) routes it to another destination (here the mesh service `my-nginx`, over mutual TLS):
 *   the client's ClientHello with that SNI gets my-nginx's certificate instead of the external host's,
 *   an SNI no rule names (a wildcard ServiceEntry host) keeps its default, and deleting the
 *   VirtualService restores the external host;
 * - a rule on a service address (my-nginx's VIP): the SNI it names goes to the external host; another
 *   SNI is refused (Istio's listener then has only the rules' filter chains).
 *
 * Lab `vt<pid>` on 10.211.0.0/24.
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
  listenersOf,
  sClient,
  WILDCARD_DOMAIN,
  WILDCARD_SERVICE_ENTRY,
  withTlsLab,
} from "./lab_tls_passthrough_support.ts";

const NGINX = "CN = nginx.example.com, O = some organization";
const EXTERNAL = `CN = ${EXTERNAL_HOST}`;
const MY_NGINX = `my-nginx.${APP_NS}.svc.cluster.local`;

/** A VirtualService of one `tls` rule: `sni` on port 443 to `to`:443. */
function virtualService(name: string, host: string, match: string, to: string): string {
  return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ${name}, namespace: ${APP_NS}}
spec:
  hosts: [${host}]
  tls:
  - match: [${match}]
    route: [{destination: {host: ${to}, port: {number: 443}}}]
`;
}

Deno.test(requires(labUnavailable(), {
  name:
    "e2e: VirtualService tls rules bound to mesh at a sidecar (SNI to another destination; others keep theirs)",
  fn: (t) =>
    withTlsLab(
      `vt${Deno.pid}`,
      "10.211.0.0/24",
      "lab_tls_mesh_routes",
      async ({ lab, dir, certs, state, timings, resolveExternal }) => {
        await resolveExternal("foo/sleep");
        const external = workloadOf(state, "ext/api").address;
        const exampleCa = join(dir, "example.com.crt"), externalCa = join(dir, "external-ca.crt");
        /** The subject of the certificate foo/sleep gets from `<connect>` with SNI `sni`. */
        const subjectOf = async (connect: string, sni: string) =>
          (await sClient(
            state,
            "foo/sleep",
            connect,
            sni,
            sni.endsWith("example.com") ? exampleCa : externalCa,
          ))
            .subject;
        const wants = (what: string, connect: string, sni: string, want: string | undefined) =>
          eventually(what, async () => {
            const got = await subjectOf(connect, sni);
            return got === want
              ? undefined
              : `${sni} via ${connect}: ${got ?? "no certificate"}, want ${want}`;
          }, 20_000);
        const applied = async (file: string, text: string, what: string, check: () => Promise<number>) => {
          await apply(lab, dir, file, text);
          timings.push(`${what}: ${await check()} ms`);
        };

        await t.step(
          "the egress task's pattern: the external host's SNI to another destination",
          async () => {
            const direct = `${EXTERNAL_HOST}:443`;
            await applied(
              "service-entries.yaml",
              `${EXTERNAL_SERVICE_ENTRY}---
${WILDCARD_SERVICE_ENTRY}`,
              "ServiceEntries applied → external host reached",
              () => wants("before the rule: the external host", direct, EXTERNAL_HOST, EXTERNAL),
            );
            await applied(
              "virtual-service.yaml",
              virtualService(
                "external-to-nginx",
                EXTERNAL_HOST,
                `{gateways: [mesh], port: 443, sniHosts: [${EXTERNAL_HOST}]}`,
                MY_NGINX,
              ).replace("  tls:\n", "  gateways: [mesh]\n  tls:\n"),
              "VirtualService applied → SNI redirected",
              () => wants("the rule's SNI goes to my-nginx", direct, EXTERNAL_HOST, NGINX),
            );
            // meshctl proxy-config listener on the sidecar's config dump names the rule at the service port.
            const listeners = await listenersOf(state, dir, "foo/sleep", ["--verbose"]);
            assert.match(
              listeners.stdout,
              /foo\/external-api port 443 \(TLS\) → TLS by SNI, VirtualService rules foo\/external-to-nginx\.tls\.0/,
              listeners.stdout + listeners.stderr,
            );
            const h = await sClient(state, "foo/sleep", direct, EXTERNAL_HOST, exampleCa);
            assert.equal(h.fingerprint, certs.nginxFingerprint, "my-nginx's own certificate, end to end");
            // An SNI no rule names, to the same address and port: its own ServiceEntry (NONE: where it dialled).
            assert.equal(await subjectOf(`${external}:443`, `www.${WILDCARD_DOMAIN}`), EXTERNAL);
            await labDelete(lab, ["virtual-service.yaml"]);
            await wants("rule deleted: the external host again", direct, EXTERNAL_HOST, EXTERNAL);
          },
        );

        await t.step(
          "a rule on a service address: the SNI it names to the external host, another refused",
          async () => {
            const vip = `my-nginx.${APP_NS}:443`;
            assert.equal(await subjectOf(vip, MY_NGINX), NGINX, "before the rule: my-nginx");
            await applied(
              "virtual-service-vip.yaml",
              virtualService(
                "nginx-to-external",
                MY_NGINX,
                `{port: 443, sniHosts: [${MY_NGINX}]}`,
                EXTERNAL_HOST,
              ),
              "VirtualService on the VIP applied → SNI redirected",
              () => wants("the VIP's rule", vip, MY_NGINX, EXTERNAL),
            );
            assert.equal(
              await subjectOf(vip, `other.${APP_NS}`),
              undefined,
              "an SNI no rule names is refused",
            );
            await labDelete(lab, ["virtual-service-vip.yaml"]);
            await wants("rule deleted: my-nginx again", vip, "nginx.example.com", NGINX);
          },
        );
      },
    ),
}));
