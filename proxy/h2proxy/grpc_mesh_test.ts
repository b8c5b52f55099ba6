/**
 * gRPC through a client proxy and a server proxy with STRICT mutual TLS, with Debian's python3-grpcio
 * on both ends (./grpc_test_app.py): the client speaks h2c to the outbound listener, the proxies
 * HTTP/2 with ALPN h2 inside mutual TLS, the server proxy h2c to the application. Unary, server,
 * client and bidirectional streaming, trailers, a 4 MiB message, a deadline the application enforces,
 * many concurrent calls on few connections; then an AuthorizationPolicy DENY (PERMISSION_DENIED), a
 * RequestAuthentication with a bad token (UNAUTHENTICATED), no endpoint (UNAVAILABLE). Each call is
 * counted in Istio's request metrics with `request_protocol="grpc"` and its `grpc_response_status`.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { grpcClient, grpcioMissing, startGrpcServer } from "./h2_apps_test_support.ts";
import {
  CLIENT_ID,
  ECHO_HOST,
  ECHO_PORT,
  ISSUER,
  jwtPolicy,
  pairCerts,
  requestCounts,
  SERVER_ID,
  startPair,
} from "./mesh_pair_test_support.ts";

const AUTHORITY = `${ECHO_HOST}:${ECHO_PORT}`;
const ISS = ISSUER;

Deno.test(requires(grpcioMissing(), {
  name: "gRPC through two proxies under STRICT mTLS: every call kind, trailers, 4 MiB, deadlines, policies",
  async fn(t) {
    const certs = await pairCerts();
    const app = await startGrpcServer();
    const pair = await startPair(certs, app.port, "GRPC");
    const call = (scenarios: string[], token?: string) =>
      grpcClient(pair.outboundAddress, AUTHORITY, scenarios, token);
    try {
      await t.step("unary, server, client and bidi streaming, trailers, 4 MiB both ways", async () => {
        const r = await call(["unary", "server_stream", "client_stream", "bidi", "trailers", "large"]);
        assert.deepEqual(r.unary, { code: "OK", reply: "hello" });
        assert.deepEqual(r.server_stream, { code: "OK", count: 100, last: "message-99" });
        assert.deepEqual(r.client_stream, { code: "OK", count: 50, bytes: 50000 });
        assert.deepEqual(r.bidi, { code: "OK", count: 20, last: "echo:19" });
        assert.deepEqual(r.trailers, { code: "OK", trailers: { "x-trailer": "unary-done" } });
        assert.deepEqual(r.large, { code: "OK", bytes: 4194560, same: true });
        // HTTP/2 in mutual TLS (ALPN h2) between the proxies, h2c to the app: one connection each.
        const out = pair.outboundStats.snapshot(), inb = pair.inboundStats.snapshot();
        assert.equal(out.upstream_cx_mtls_total, 1);
        assert.equal(out.upstream_cx_http2_total, 1);
        assert.equal(inb.downstream_cx_mtls_total, 1);
        assert.equal(inb.downstream_cx_http2_total, 1);
        assert.equal(inb.upstream_cx_http2_total, 1);
        assert.ok(
          pair.serverLog.entries.some((e) => e.msg === "HTTP/2 connection" && e.fields?.via === "alpn"),
        );
        // Istio's stats plugin: gRPC requests are `grpc`, with the status of their trailers.
        const echo = { destination_service: ECHO_HOST };
        assert.deepEqual(requestCounts(pair.clientMetrics, echo, true), { "source grpc 200 0": 6 });
        assert.deepEqual(requestCounts(pair.serverMetrics, echo, true), { "destination grpc 200 0": 6 });
      });

      await t.step("the application sees the client's identity in X-Forwarded-Client-Cert", async () => {
        const r = await call(["metadata"]);
        const seen = r.metadata.seen as Record<string, string>;
        assert.match(
          seen["x-forwarded-client-cert"],
          new RegExp(`By=${SERVER_ID};Hash=[0-9a-f]{64};.*URI=${CLIENT_ID}`),
        );
        assert.equal(seen["te"], undefined, "te is not metadata");
      });

      await t.step("a deadline: grpc-timeout reaches the application, which ends the call", async () => {
        const r = await call(["deadline"]);
        assert.equal(r.deadline.code, "DEADLINE_EXCEEDED");
        assert.ok((r.deadline.seconds as number) < 3, `ended after ${r.deadline.seconds} s`);
      });

      await t.step("50 concurrent calls share the connections between the proxies", async () => {
        const before = pair.outboundStats.snapshot().upstream_cx_total;
        const r = await call(["concurrent"]);
        assert.deepEqual(r.concurrent, { code: "OK", replies: 50 });
        const opened = pair.outboundStats.snapshot().upstream_cx_total - before;
        assert.ok(opened <= 1, `${opened} new upstream connections for 50 concurrent streams`);
      });

      await t.step("AuthorizationPolicy DENY: PERMISSION_DENIED, RBAC: access denied", async () => {
        pair.setPolicies([{
          name: "deny-unary",
          namespace: "foo",
          action: "DENY",
          rules: [{ to: [{ operation: { paths: ["/test.Echo/Unary"] } }] }],
        }]);
        const r = await call(["unary", "server_stream"]);
        assert.deepEqual(r.unary, { code: "PERMISSION_DENIED", details: "RBAC: access denied" });
        assert.equal(r.server_stream.code, "OK", "other methods are allowed");
        // The server proxy's denial (a trailers-only reply; its HTTP status stays RBAC's 403).
        assert.equal(requestCounts(pair.serverMetrics, {}, true)["destination grpc 403 7"], 1);
        assert.equal(requestCounts(pair.clientMetrics, {}, true)["source grpc 200 7"], 1);
        pair.setPolicies([]);
      });

      await t.step("RequestAuthentication with a bad token: UNAUTHENTICATED", async () => {
        const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
        const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256" }] });
        pair.setPolicies([], [jwtPolicy(jwks)]);
        const expired = await new SignJWT({ iss: ISS, sub: "u", exp: Math.floor(Date.now() / 1000) - 600 })
          .setProtectedHeader({ alg: "RS256", kid: "k1" }).sign(privateKey);
        const bad = await call(["unary"], expired);
        assert.deepEqual(bad.unary, { code: "UNAUTHENTICATED", details: "Jwt is expired" });
        const good = await new SignJWT({ iss: ISS, sub: "u", exp: Math.floor(Date.now() / 1000) + 60 })
          .setProtectedHeader({ alg: "RS256", kid: "k1" }).sign(privateKey);
        assert.equal((await call(["unary"], good)).unary.code, "OK");
        pair.setPolicies([]);
      });

      await t.step(
        "no such service: the client proxy answers UNIMPLEMENTED (404); no upstream: UNAVAILABLE",
        async () => {
          const r = await grpcClient(pair.outboundAddress, "nosuch.foo.svc.cluster.local:9000", ["unary"]);
          assert.equal(r.unary.code, "UNIMPLEMENTED");
          await app.stop();
          const down = await call(["unary"]);
          assert.equal(down.unary.code, "UNAVAILABLE");
          const client = requestCounts(pair.clientMetrics, {}, true);
          assert.equal(client["source grpc 404 12"], 1, JSON.stringify(client));
          assert.equal(client["source grpc 200 14"], 1, JSON.stringify(client));
        },
      );
    } finally {
      await pair.stop();
      await app.stop();
    }
  },
}));
