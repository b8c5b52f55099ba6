/**
 * The VirtualService's table-driven test cases: the shape of a case, builders of the specs they
 * check, and the runner that validates each through the whole kind (schema and rules). Test-only:
 * excluded from the JSR package.
 *
 * @module
 */
import type { Severity } from "../../finding.ts";
import { validateResource } from "../../validate_resource.ts";
import { assertFindingOrValid } from "../_test_support.ts";
import { virtualService } from "../virtual_service.ts";

/** One rule exercised: the spec, and the finding it must produce (none: it must produce no error). */
export interface Case {
  name: string;
  spec: Record<string, unknown>;
  want?: { path: string; message: string; severity?: Severity };
}

type Obj = Record<string, unknown>;

/** A route destination to `host`, with more fields. */
export const to = (host: string, extra: Obj = {}): Obj => ({ destination: { host }, ...extra });
/** A VirtualService for `reviews` in the mesh with one HTTP rule made of `rule`. */
export const http = (rule: Obj, spec: Obj = {}): Obj => ({ hosts: ["reviews"], http: [rule], ...spec });
/** As {@link http}, with the rule forwarding to reviews. */
export const fwd = (rule: Obj, spec: Obj = {}): Obj => http({ route: [to("reviews")], ...rule }, spec);
/** As {@link fwd}, with one match. */
export const matching = (match: Obj, spec: Obj = {}): Obj => fwd({ match: [match] }, spec);
/** Bound to a gateway, not to the mesh. */
export const atGateway: Obj = { gateways: ["istio-system/ingress"] };
/** A VirtualService for `*.bookinfo.com` at a gateway with one TLS rule, `route`. */
export const tls = (route: Obj, spec: Obj = {}): Obj => ({
  hosts: ["*.bookinfo.com"],
  ...atGateway,
  tls: [route],
  ...spec,
});
/** A TLS rule on port 443 matching the SNI hosts, forwarding to login. */
export const sni = (...hosts: string[]): Obj => ({
  match: [{ port: 443, sniHosts: hosts }],
  route: [to("login")],
});

/** One `Deno.test` per case: the VirtualService `vs` in namespace `ns` with the case's spec. */
export function testCases(cases: readonly Case[]): void {
  for (const c of cases) {
    Deno.test(`VirtualService: ${c.name}`, () => {
      const findings = validateResource(virtualService, {
        apiVersion: "networking.mesh.io/v1",
        kind: "VirtualService",
        metadata: { name: "vs", namespace: "ns" },
        spec: JSON.parse(JSON.stringify(c.spec)),
      });
      assertFindingOrValid(findings, c.want);
    });
  }
}
