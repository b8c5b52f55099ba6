/**
 * The ingress gateway end to end (policies seed, "RequestAuthentication on an ingress gateway";
 * Istio's "Ingress Gateways" task): meshd in process with its CA, httpbin (gunicorn) behind its
 * sidecar on 127.0.0.2, and a gateway proxy (`--type router`) on 127.0.0.4 whose listeners and routes
 * come from a Gateway and a VirtualService in meshd's config directory. Real curl is the client.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { join } from "node:path";
import { curl } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { eventually, gatewayMeshServices, runMeshctl, startGatewayMesh } from "./e2e_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const HTTPBIN_IP = "127.0.0.2";
const GATEWAY_IP = "127.0.0.4";

/** The gateway's service maps port 80 to this targetPort, where the gateway proxy must listen. */
const GATEWAY_TARGET_PORT = freePort();

const SERVICES = gatewayMeshServices({ httpbin: HTTPBIN_IP, gateway: GATEWAY_IP }, [{
  name: "http",
  number: 80,
  protocol: "HTTP",
  targetPort: GATEWAY_TARGET_PORT,
}]);

// Istio's "Ingress Gateways" task, as written there.
const GATEWAY = `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: httpbin-gateway, namespace: foo}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["httpbin.example.com"]
`;

function virtualService(prefixes: string[]): string {
  return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: ["httpbin.example.com"]
  gateways: [httpbin-gateway]
  http:
  - match: [${prefixes.map((p) => `{uri: {prefix: ${p}}}`).join(", ")}]
    route:
    - destination: {port: {number: 8000}, host: httpbin}
`;
}

const STRICT_FOO = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;

/** Policies seed rows at the gateway: JWT required on /headers only (Istio's authn-policy end-user part). */
function gatewayPolicies(jwks: string): string {
  return `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt-example, namespace: mesh-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  jwtRules:
  - issuer: testing@secure.mesh.io
    jwks: '${jwks}'
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: require-jwt-headers, namespace: mesh-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: DENY
  rules:
  - from: [{source: {notRequestPrincipals: ["*"]}}]
    to: [{operation: {paths: ["/headers"]}}]
`;
}

/** `curl -H Host:<host> http://<gateway>/<path>`: the status and the body. */
async function viaGateway(
  host: string,
  path: string,
  extra: string[] = [],
): Promise<{ status: string; body: string }> {
  const r = await curl([
    ...extra,
    "-s",
    "--max-time",
    "2",
    "-H",
    `Host: ${host}`,
    "-w",
    "\n%{http_code}",
    `http://${GATEWAY_IP}:${GATEWAY_TARGET_PORT}${path}`,
  ]);
  if (r.code !== 0) return { status: `exit ${r.code}`, body: r.stderr };
  const nl = r.stdout.lastIndexOf("\n");
  return { status: r.stdout.slice(nl + 1), body: r.stdout.slice(0, nl) };
}

const expectStatus = (host: string, path: string, want: string) => async () => {
  const r = await viaGateway(host, path);
  return r.status === want ? undefined : `${host}${path}: ${r.status} ${r.body.slice(0, 200)}`;
};

Deno.test(requires(httpbinMissing(), {
  name:
    "e2e: ingress gateway routes by Gateway + VirtualService, over automatic mTLS, following config changes",
  async fn(t) {
    const mesh = await startGatewayMesh({
      "services.yaml": SERVICES,
      "gateway.yaml": GATEWAY,
      "vs.yaml": virtualService(["/status", "/headers"]),
    }, { httpbin: HTTPBIN_IP, gateway: GATEWAY_IP });
    const { config, dir, gateway } = mesh;
    try {
      await t.step("a bound host and path reach httpbin through the sidecar over mutual TLS", async () => {
        await eventually("200 on /status/200", expectStatus("httpbin.example.com", "/status/200", "200"));
        const r = await viaGateway("httpbin.example.com:80", "/headers");
        assert.equal(r.status, "200");
        const headers = JSON.parse(r.body).headers as Record<string, string>;
        assert.match(
          headers["X-Forwarded-Client-Cert"] ?? "",
          /(^|;)URI=spiffe:\/\/cluster\.local\/ns\/mesh-system\/sa\/ingressgateway(;|$)/,
        );
        assert.equal(headers.Host, "httpbin.example.com:80", "the gateway keeps the client's Host");
      });

      await t.step("no route: an unmatched path or host gets 404 with the reason", async () => {
        const path = await viaGateway("httpbin.example.com", "/ip");
        assert.equal(path.status, "404");
        assert.match(path.body, /no route for \/ip in virtual host httpbin\.example\.com:80/);
        const host = await viaGateway("other.example.com", "/status/200");
        assert.equal(host.status, "404");
        assert.match(host.body, /no virtual host for other\.example\.com on gateway port 80/);
      });

      await t.step("routes match the normalized path: /status/../ip is /ip, which has no route", async () => {
        for (const raw of ["/status/../ip", "/status/%2e%2e/ip", "/%69p"]) {
          const r = await viaGateway("httpbin.example.com", raw, ["--path-as-is"]);
          assert.equal(r.status, "404", `${raw}: ${r.body}`);
          assert.match(r.body, /no route for \/ip in virtual host/, raw);
        }
        const back = await viaGateway("httpbin.example.com", "/ip/../status/200", ["--path-as-is"]);
        assert.equal(back.status, "200", "and /ip/../status/200 takes the /status route");
      });

      await t.step("STRICT in foo changes nothing for the gateway (it is a mesh client)", async () => {
        await Deno.writeTextFile(join(config, "strict.yaml"), STRICT_FOO);
        await new Promise((r) => setTimeout(r, 500));
        await eventually("200 under STRICT", expectStatus("httpbin.example.com", "/status/200", "200"));
        const plain = await curl([
          "-s",
          "-o",
          "/dev/null",
          "--max-time",
          "2",
          `http://${HTTPBIN_IP}:8080/ip`,
        ]);
        assert.equal(plain.code, 56, "and a plain-text client is refused by httpbin's sidecar");
      });

      await t.step("a VirtualService change reaches the gateway: /ip routed", async () => {
        await Deno.writeTextFile(join(config, "vs.yaml"), virtualService(["/status", "/headers", "/ip"]));
        await eventually("200 on /ip", expectStatus("httpbin.example.com", "/ip", "200"));
      });

      await t.step(
        "the listener follows the Gateway: closed when deleted, bound again when restored",
        async () => {
          await Deno.remove(join(config, "gateway.yaml"));
          await eventually("refused without a Gateway", expectStatus("httpbin.example.com", "/ip", "exit 7"));
          await Deno.writeTextFile(join(config, "gateway.yaml"), GATEWAY);
          await eventually("200 with the Gateway back", expectStatus("httpbin.example.com", "/ip", "200"));
        },
      );

      await t.step(
        "RequestAuthentication and a DENY policy selecting the gateway apply to the bound service",
        async () => {
          const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
          const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
          await Deno.writeTextFile(
            join(config, "gateway-policies.yaml"),
            gatewayPolicies(JSON.stringify({ keys: [jwk] })),
          );
          const token = await new SignJWT({ iss: "testing@secure.mesh.io", sub: "user-1" })
            .setProtectedHeader({ alg: "ES256", kid: "k1" })
            .setExpirationTime("1h")
            .sign(privateKey);
          const bearer = (t: string) => ["-H", `Authorization: Bearer ${t}`];
          await eventually(
            "tokenless /headers denied",
            expectStatus("httpbin.example.com", "/headers", "403"),
          );
          assert.equal(
            (await viaGateway("httpbin.example.com", "/status/200")).status,
            "200",
            "other paths need no token",
          );
          const ok = await viaGateway("httpbin.example.com", "/headers", bearer(token));
          assert.equal(ok.status, "200", ok.body);
          assert.equal(JSON.parse(ok.body).headers.Authorization, undefined, "the token is not forwarded");
          const bad = await viaGateway(
            "httpbin.example.com",
            "/status/200",
            bearer(token.slice(0, -4) + "AAAA"),
          );
          assert.equal(bad.status, "401", "an invalid token is rejected on every path");
          await Deno.remove(join(config, "gateway-policies.yaml"));
          await eventually("policies removed", expectStatus("httpbin.example.com", "/headers", "200"));
        },
      );

      await t.step(
        "/config_dump shows the listener and the route configuration; meshctl proxy-config route reads it",
        async () => {
          const dump = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/config_dump`)).json();
          const text = JSON.stringify(dump);
          assert.ok(text.includes(`"name":"${GATEWAY_IP}_${GATEWAY_TARGET_PORT}"`), "listener");
          assert.ok(text.includes(`"route_config_name":"http.80"`), "listener → route");
          assert.ok(text.includes(`"outbound|8000||httpbin.foo.svc.cluster.local"`), "route → cluster");
          const file = join(dir, "gateway-dump.json");
          await Deno.writeTextFile(file, JSON.stringify(dump));
          const out = await runMeshctl(["proxy-config", "route", "-f", file]);
          const table = out.stdout;
          assert.equal(out.code, 0, out.stderr);
          assert.match(
            table,
            /http\.80\s+httpbin\.example\.com:80\s+httpbin\.example\.com\s+\/status\*,\/headers\*,\/ip\*\s+httpbin\.foo/,
          );
        },
      );
    } catch (e) {
      mesh.dumpLogs();
      throw e;
    } finally {
      await mesh.stop();
    }
  },
}));
