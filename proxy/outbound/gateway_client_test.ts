import assert from "node:assert/strict";
import tls from "node:tls";
import { makeCa, makeLeaf } from "../inbound/test_support.ts";
import { type GatewayClient, gatewayClient, type GatewayClientRefusal } from "./gateway_client.ts";

const SLEEP = "spiffe://cluster.local/ns/foo/sa/sleep";

/** One real handshake; the server verifies against its CA and asks gatewayClient about the client. */
async function checked(
  client: "none" | "ours" | "foreign",
  subjectAltNames: string[],
): Promise<GatewayClient | GatewayClientRefusal> {
  const ca = await makeCa("gateway client test CA");
  const server = await makeLeaf(ca, { dnsNames: ["gw.example.com"] });
  const issuer = client === "foreign" ? await makeCa("another CA") : ca;
  const leaf = client === "none"
    ? undefined
    : await makeLeaf(issuer, { uris: [SLEEP], dnsNames: ["sleep.foo"] });
  const result = Promise.withResolvers<GatewayClient | GatewayClientRefusal>();
  const srv = tls.createServer(
    { cert: server.certPem, key: server.keyPem, ca: [ca.pem], requestCert: true, rejectUnauthorized: false },
    (s) => {
      result.resolve(gatewayClient(s, subjectAltNames));
      s.end();
    },
  );
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const c = tls.connect({
    host: "127.0.0.1",
    port: (srv.address() as { port: number }).port,
    servername: "gw.example.com",
    ca: [ca.pem],
    ...(leaf ? { cert: leaf.certPem, key: leaf.keyPem } : {}),
  });
  c.on("error", () => {});
  c.resume();
  try {
    return await result.promise;
  } finally {
    c.destroy();
    await new Promise((r) => srv.close(r));
  }
}

Deno.test("gatewayClient: a verified client gives its SPIFFE principal and XFCC element", async () => {
  const got = await checked("ours", []);
  assert.ok(!("reason" in got), JSON.stringify(got));
  assert.equal(got.principal, SLEEP);
  const xfcc = new TextDecoder().decode(got.xfcc);
  assert.match(
    xfcc,
    /^Hash=[0-9a-f]{64};Subject="";URI=spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep;DNS=sleep\.foo$/,
  );
});

const REFUSED: [string, "none" | "ours" | "foreign", string[], string, RegExp][] = [
  ["no certificate", "none", [], "gateway TLS handshake failed", /./],
  ["another CA's certificate", "foreign", [], "gateway TLS handshake failed", /./],
  [
    "none of the SANs",
    "ours",
    ["spiffe://cluster.local/ns/bar/sa/x"],
    "gateway TLS connection refused",
    /none of the SANs/,
  ],
];

for (const [label, client, sans, message, reason] of REFUSED) {
  Deno.test(`gatewayClient: refused: ${label}`, async () => {
    const got = await checked(client, sans);
    assert.ok("reason" in got, JSON.stringify(got));
    assert.equal(got.message, message);
    assert.match(got.reason, reason);
  });
}

Deno.test("gatewayClient: a listed SAN lets the client in", async () => {
  const got = await checked("ours", ["sleep.foo"]);
  assert.ok(!("reason" in got), JSON.stringify(got));
});
