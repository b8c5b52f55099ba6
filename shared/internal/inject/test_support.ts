/**
 * Test helpers of the injection: Istio's httpbin sample pod as the API server sends it to a webhook.
 *
 * @module
 */
import type { JsonObject } from "./json.ts";

/**
 * The pod of Istio's samples/httpbin/httpbin.yaml Deployment (istio/istio 1aa8c77) as the API
 * server sends it to a mutating webhook: generateName from the ReplicaSet, the ServiceAccount
 * admission plugin's token volume already added.
 */
export function httpbinPod(): JsonObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: "httpbin-6f4d8f7b9c-",
      namespace: "foo",
      labels: { app: "httpbin", version: "v1", "pod-template-hash": "6f4d8f7b9c" },
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        name: "httpbin-6f4d8f7b9c",
        uid: "r-1",
      }],
    },
    spec: {
      serviceAccountName: "httpbin",
      containers: [{
        image: "docker.io/kennethreitz/httpbin",
        imagePullPolicy: "IfNotPresent",
        name: "httpbin",
        ports: [{ containerPort: 80, protocol: "TCP" }],
        volumeMounts: [{
          name: "kube-api-access-abcde",
          mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
          readOnly: true,
        }],
      }],
      volumes: [{
        name: "kube-api-access-abcde",
        projected: { sources: [{ serviceAccountToken: { path: "token" } }] },
      }],
    },
  };
}
