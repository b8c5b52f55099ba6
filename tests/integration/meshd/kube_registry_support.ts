/**
 * Kubernetes objects for the service registry's tests, applied with kubectl to the test API server
 * (which runs no controllers: Pods get their IP through `/status`, EndpointSlices are applied).
 *
 * @module
 */
import { kubectl } from "./kube_support.ts";

/** A Pod of app httpbin in foo, with a named container port `http-web` (8080); `labels` as YAML flow. */
export function pod(
  name: string,
  labels = "",
  containers = "- {name: app, ports: [{name: http-web, containerPort: 8080}]}",
): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: foo, labels: {app: httpbin${labels ? `, ${labels}` : ""}}}
spec:
  serviceAccountName: httpbin
  containers:
  ${containers}
`;
}

/** Service httpbin: port http 80 to the named targetPort http-web. */
export const SERVICE = `apiVersion: v1
kind: ServiceAccount
metadata: {name: httpbin, namespace: foo}
---
apiVersion: v1
kind: Service
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {app: httpbin}
  ports: [{name: http, port: 80, targetPort: http-web}]
`;

/** The EndpointSlice of httpbin: `[ip, pod, ready]` each. No ports: each targetPort is resolved by meshd. */
export function slice(endpoints: [string, string, boolean][]): string {
  return `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: httpbin-abcde, namespace: foo, labels: {kubernetes.io/service-name: httpbin}}
addressType: IPv4
endpoints:
${
    endpoints.map(([ip, name, ready]) =>
      `- {addresses: ["${ip}"], conditions: {ready: ${ready}}, targetRef: {kind: Pod, name: ${name}, namespace: foo}}`
    ).join("\n")
  }
`;
}

/** Gives a pod its IP and phase Running, as the kubelet would, through the status subresource. */
export async function podRunning(kubeconfig: string, name: string, ip: string): Promise<void> {
  await kubectl(kubeconfig, [
    "patch",
    "pod",
    name,
    "-n",
    "foo",
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status: { phase: "Running", podIP: ip, podIPs: [{ ip }] } }),
  ]);
}

/** Service httpbin with one ready endpoint, pod httpbin-1 (10.1.0.5, sidecar label, service account httpbin). */
export async function applyHttpbin(kubeconfig: string): Promise<void> {
  await kubectl(
    kubeconfig,
    ["apply", "-f", "-"],
    [SERVICE, pod("httpbin-1", "security.istio.io/tlsMode: istio")].join("---\n"),
  );
  await podRunning(kubeconfig, "httpbin-1", "10.1.0.5");
  await kubectl(kubeconfig, ["apply", "-f", "-"], slice([["10.1.0.5", "httpbin-1", true]]));
}
