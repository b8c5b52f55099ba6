/**
 * Request targets at a real ingress gateway (issue 12: `GET /headers#x` reached /headers there):
 * meshd in process, httpbin (gunicorn) behind its sidecar, and a gateway proxy process whose
 * AuthorizationPolicy denies /headers and DELETE. Raw bytes, the mesh's default path normalization
 * (DECODE_AND_MERGE_SLASHES): every form of /headers is refused, wrong-case methods are 400, and an
 * absolute-form target routes by its authority, which httpbin receives as Host over the sidecar's mTLS.
 */
import assert from "node:assert/strict";
import { type RawResponse } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { sendRaw } from "../../proxy/inbound/target_echo.ts";
import { eventually, gatewayMeshServices, startGatewayMesh } from "./e2e_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const HTTPBIN_IP = "127.0.0.2";
const GATEWAY_IP = "127.0.0.4";
const GATEWAY_PORT = freePort();

const FILES = {
  "services.yaml": gatewayMeshServices({ httpbin: HTTPBIN_IP, gateway: GATEWAY_IP }, [{
    name: "http",
    number: 80,
    protocol: "HTTP",
    targetPort: GATEWAY_PORT,
  }]),
  "gateway.yaml": `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: httpbin-gateway, namespace: foo}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["httpbin.example.com"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: ["httpbin.example.com"]
  gateways: [httpbin-gateway]
  http:
  - route:
    - destination: {port: {number: 8000}, host: httpbin}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-headers, namespace: mesh-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: DENY
  rules: [{to: [{operation: {paths: ["/headers"]}}]}, {to: [{operation: {methods: [DELETE]}}]}]
`,
};

const send = (head: string): Promise<RawResponse> => sendRaw(GATEWAY_PORT, head, { host: GATEWAY_IP });

const request = (target: string, method = "GET", host = "httpbin.example.com") =>
  `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

Deno.test(requires(httpbinMissing(), {
  name: "e2e: the ingress gateway refuses #, wrong-case methods and every form of a denied path",
  async fn() {
    const mesh = await startGatewayMesh(FILES, { httpbin: HTTPBIN_IP, gateway: GATEWAY_IP });
    try {
      await eventually("the gateway routes /get", async () => {
        try {
          const r = await send(request("/get"));
          return r.status === 200 ? undefined : `${r.status} ${r.body.slice(0, 200)}`;
        } catch (e) {
          return String(e);
        }
      }, 20_000);
      const status = async (target: string, method?: string) => (await send(request(target, method))).status;
      assert.equal(await status("/headers"), 403);
      for (const target of ["/headers#x", "/anything#/../headers", "/headers%00"]) {
        assert.equal(await status(target), 400, target);
      }
      for (const target of ["//headers", "/%2Fheaders", "/\\headers", "/a/../headers", "/%68eaders"]) {
        assert.equal(await status(target), 403, target);
      }
      assert.equal(await status("/anything", "DELETE"), 403);
      for (const method of ["delete", "Delete"]) assert.equal(await status("/anything", method), 400, method);
      // Routed by the absolute-form authority (the Host header names no Gateway host); httpbin gets it as Host.
      const r = await send(request("http://httpbin.example.com/get?x=1", "GET", "other.example"));
      assert.equal(r.status, 200, r.body);
      const got = JSON.parse(r.body) as { headers: Record<string, string>; args: Record<string, string> };
      assert.equal(got.headers.Host, "httpbin.example.com");
      assert.deepEqual(got.args, { x: "1" });
    } catch (e) {
      mesh.dumpLogs();
      throw e;
    } finally {
      await mesh.stop();
    }
  },
}));
