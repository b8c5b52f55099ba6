/**
 * Validation cost: what meshd's config store pays on every changed file, and meshctl per file.
 * Run with `./dev bench:micro`.
 */
import { validateText } from "../../shared/mod.ts";

const ROOT = new URL("../../", import.meta.url);
const readFixture = (p: string) => Deno.readTextFileSync(new URL(`tests/fixtures/istio/${p}`, ROOT));

const authz = readFixture("authz-deny/03_authorization_policy_allow_path_ip.yaml");
const pa = readFixture("mtls-migration/01_peer_authentication_strict_foo.yaml");
const hundredPolicies = Array.from({ length: 100 }, (_, i) => authz.replace(/name: .*/, `name: p${i}`)).join(
  "\n---\n",
);

Deno.bench("validate one PeerAuthentication", { group: "single" }, () => {
  validateText(pa, "pa.yaml");
});

Deno.bench("validate one AuthorizationPolicy", { group: "single", baseline: true }, () => {
  validateText(authz, "ap.yaml");
});

Deno.bench("validate a 100-document AuthorizationPolicy stream", { group: "stream" }, () => {
  const r = validateText(hundredPolicies, "many.yaml");
  if (r.resources.length !== 100) throw new Error(`expected 100 valid resources, got ${r.resources.length}`);
});
