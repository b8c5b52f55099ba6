/**
 * The scale bench's config directory: `services` ServiceEntries with one WorkloadEntry each (50
 * namespaces), one WorkloadEntry per simulated proxy (`client-<i>`, namespace `bench`, label
 * `app: client`) plus the probe's, and one AuthorizationPolicy selecting every client, whose change
 * the bench times.
 *
 * @module
 */

/** The WorkloadEntry name of the probe proxy, which learns how many resources a synced proxy holds. */
export const PROBE = "client-probe";

/** The probe's node id (an Istio sidecar id). */
export const PROBE_NODE_ID = `sidecar~10.199.0.1~${PROBE}.bench~bench.svc.cluster.local`;

function documents(services: number, clients: number): string[] {
  const docs: string[] = [];
  for (let i = 0; i < services; i++) {
    docs.push(`apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: svc-${i}, namespace: ns-${i % 50}}
spec:
  hosts: [svc-${i}.ns-${i % 50}.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: 8080, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: svc-${i}}}
---
apiVersion: networking.mesh.io/v1
kind: WorkloadEntry
metadata: {name: svc-${i}-1, namespace: ns-${i % 50}}
spec: {address: 10.${(i >> 8) & 255}.${i & 255}.1, labels: {app: svc-${i}}, serviceAccount: svc-${i}}`);
  }
  const client = (name: string, address: string) =>
    `apiVersion: networking.mesh.io/v1
kind: WorkloadEntry
metadata: {name: ${name}, namespace: bench}
spec: {address: ${address}, labels: {app: client}, serviceAccount: client}`;
  docs.push(client(PROBE, "10.199.0.1"));
  for (let i = 0; i < clients; i++) {
    // The address client.ts's node id names: 10.200.0.0 and up (25,000 clients end at 10.200.97.167).
    docs.push(client(`client-${i}`, `10.${200 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`));
  }
  return docs;
}

/** The AuthorizationPolicy the bench changes (version `n`). */
export function policy(n: number): string {
  return `apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: {name: bench-policy, namespace: bench}
spec:
  selector: {matchLabels: {app: client}}
  action: DENY
  rules: [{to: [{operation: {paths: ["/deny-${n}"], ports: ["8080"]}}]}]
`;
}

/**
 * Writes the config into `dir`, in files under meshd's 4 MiB per-file limit (400 documents each),
 * and the policy (version 0) as `policy.yaml`.
 */
export async function writeConfig(dir: string, services: number, clients: number): Promise<void> {
  const all = documents(services, clients).join("\n---\n").split("\n---\n");
  for (let i = 0; i < all.length; i += 400) {
    await Deno.writeTextFile(`${dir}/config-${i}.yaml`, all.slice(i, i + 400).join("\n---\n") + "\n");
  }
  await Deno.writeTextFile(`${dir}/policy.yaml`, policy(0));
}
