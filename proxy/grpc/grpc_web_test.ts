/**
 * gRPC-Web over HTTP/1.1 through the inbound listener: a request the filter chain refuses gets Envoy's
 * gRPC local reply (200, grpc-status, grpc-message) instead of the HTTP one, so a gRPC-Web client sees
 * PERMISSION_DENIED; a plain HTTP request to the same path still gets 403. Real curl, a Deno app.
 */
import assert from "node:assert/strict";
import { InboundListener } from "../inbound/listener.ts";
import { curl, RecordingLog, snapshotOf, TestApp } from "../inbound/test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

Deno.test("gRPC-Web over HTTP/1.1: a denial is grpc-status 7, an HTTP request's is 403", async () => {
  const app = new TestApp();
  const snapshot: RuntimeSnapshot = {
    ...snapshotOf("PERMISSIVE", undefined),
    authorizations: {
      "foo/deny": {
        name: "deny",
        namespace: "foo",
        action: "DENY",
        rules: [{ to: [{ operation: { paths: ["/test.Echo/Unary"] } }] }],
      },
    },
  };
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: app.port,
    snapshot: () => snapshot,
    log: new RecordingLog(),
  });
  await listener.start();
  try {
    const url = `http://127.0.0.1:${listener.port}/test.Echo/Unary`;
    const web = await curl(["-i", "-X", "POST", "-H", "content-type: application/grpc-web+proto", url]);
    assert.match(web.stdout, /^HTTP\/1.1 200 OK\r\n/);
    assert.match(web.stdout, /\r\ngrpc-status: 7\r\n/);
    assert.match(web.stdout, /\r\ngrpc-message: RBAC: access denied\r\n/);
    const plain = await curl(["-i", "-X", "POST", url]);
    assert.match(plain.stdout, /^HTTP\/1.1 403 Forbidden\r\n/);
  } finally {
    await listener.close();
    await app.stop();
  }
});
