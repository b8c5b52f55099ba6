/**
 * Push context build cost: what meshd pays on every debounced config or proxy change. The config is
 * validated once up front (as the config store does), so only buildPushContext is timed: 40
 * namespaces, each with 25 WorkloadEntries, 2 ServiceEntries, a PeerAuthentication, 2
 * AuthorizationPolicies and a RequestAuthentication, plus an ingress gateway with a Gateway and a
 * VirtualService (1,001 workloads in all). Beside it, what a policy-only change costs instead (derived
 * from the last context, meshd/push_context/policy_change.ts). Run with `./dev bench:micro`.
 */
import { validateText } from "../../shared/mod.ts";
import { ResourceIndex } from "../../meshd/config_store/resource_index.ts";
import { buildPushContext } from "../../meshd/push_context/push_context.ts";
import { withPolicies } from "../../meshd/push_context/policy_change.ts";

const NAMESPACES = 40;
const WORKLOADS = 25;

function namespaceYaml(ns: string): string {
  const docs: string[] = [];
  for (let i = 0; i < WORKLOADS; i++) {
    const app = i % 2 === 0 ? "httpbin" : "sleep";
    docs.push(`apiVersion: networking.mesh.io/v1
kind: WorkloadEntry
metadata: {name: ${app}-${i}, namespace: ${ns}}
spec:
  address: 10.${NAMESPACES % 250}.${i}.${(ns.length + i) % 250}
  labels: {app: ${app}, version: v${i % 3}}
  serviceAccount: ${app}
  ports: {http: 8080}`);
  }
  for (const app of ["httpbin", "sleep"]) {
    docs.push(`apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: ${app}, namespace: ${ns}}
spec:
  hosts: [${app}.${ns}.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: 8080, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: ${app}}}`);
  }
  docs.push(`apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: ${ns}}
spec:
  mtls: {mode: STRICT}
  selector: {matchLabels: {app: httpbin}}
  portLevelMtls: {"8080": {mode: PERMISSIVE}}`);
  for (const action of ["ALLOW", "DENY"]) {
    docs.push(`apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: {name: ${action.toLowerCase()}, namespace: ${ns}}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: ${action}
  rules: [{from: [{source: {namespaces: [${ns}]}}], to: [{operation: {methods: [GET], paths: [/status/*]}}]}]`);
  }
  docs.push(`apiVersion: security.mesh.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: ${ns}}
spec:
  selector: {matchLabels: {app: httpbin}}
  jwtRules: [{issuer: https://issuer.${ns}.example.com, jwks: '{"keys":[]}'}]`);
  return docs.join("\n---\n");
}

const gatewayYaml = `apiVersion: networking.mesh.io/v1
kind: WorkloadEntry
metadata: {name: ingressgateway, namespace: mesh-system}
spec: {address: 10.254.0.1, labels: {istio: ingressgateway}, serviceAccount: ingressgateway}
---
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: {name: public, namespace: mesh-system}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: {name: routes, namespace: mesh-system}
spec:
  hosts: ["*"]
  gateways: [public]
  http: [{match: [{uri: {prefix: /ns0}}], route: [{destination: {host: httpbin.ns0.svc.cluster.local, port: {number: 8000}}}]}]`;

const index = new ResourceIndex();
for (let n = 0; n < NAMESPACES; n++) {
  const result = validateText(namespaceYaml(`ns${n}`), `ns${n}.yaml`);
  if (result.issues.some((i) => i.severity === "error")) throw new Error(JSON.stringify(result.issues));
  index.apply(`ns${n}.yaml`, result);
}
const gateway = validateText(gatewayYaml, "gateway.yaml");
if (gateway.issues.some((i) => i.severity === "error")) throw new Error(JSON.stringify(gateway.issues));
index.apply("gateway.yaml", gateway);
const resources = index.entries();
const connected = new Set([...Array(NAMESPACES).keys()].map((n) => `ns${n}/httpbin-0`));

Deno.bench("build a push context of 1,001 workloads and 80 services", () => {
  const ctx = buildPushContext(resources, { version: "1", connected });
  if (ctx.workloads.size !== NAMESPACES * WORKLOADS + 1) throw new Error(`${ctx.workloads.size} workloads`);
  if (ctx.gatewayRoutes.size !== 1) throw new Error(`${ctx.gatewayRoutes.size} gateway workloads`);
});

const built = buildPushContext(resources, { version: "1", connected });

Deno.bench("derive it for an AuthorizationPolicy change", () => {
  withPolicies(built, resources, new Set(["AuthorizationPolicy"]), "2");
});

Deno.bench("derive it for a PeerAuthentication change (every workload's ports again)", () => {
  withPolicies(built, resources, new Set(["PeerAuthentication"]), "2");
});
