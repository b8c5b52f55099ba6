import assert from "node:assert/strict";
import { makeTestCa } from "../../shared/credentials/_test_support.ts";
import type { RouteConfiguration } from "../../shared/routing/mod.ts";
import { EMPTY_SNAPSHOT, type RuntimeSnapshot, type TlsCredentialInfo } from "../runtime/snapshot.ts";
import { GatewayTls, peerSans } from "./gateway_tls.ts";

const { ca, leaf } = await makeTestCa();
const httpbin = await leaf("httpbin.example.com");
const hello = await leaf("helloworld.example.com");

function route(name: string, host: string, mode: "SIMPLE" | "MUTUAL", secret: string): RouteConfiguration {
  return {
    name,
    port: 443,
    bindPort: 8443,
    gateways: ["foo/gw"],
    virtualHosts: [],
    tls: {
      mode,
      sniHosts: [host],
      credentialName: `kubernetes://${secret}`,
      caCredentialName: mode === "MUTUAL" ? `kubernetes://${secret}-cacert` : "",
      minProtocolVersion: "",
      maxProtocolVersion: "",
      subjectAltNames: [],
    },
  };
}

const credential = (
  name: string,
  cert: { certPem: string; keyPem: string } | null,
  caPem = "",
): TlsCredentialInfo => ({
  name: `kubernetes://${name}`,
  certificateChain: cert?.certPem ?? "",
  privateKey: cert?.keyPem ?? "",
  caCertificates: caPem,
  source: `mesh-system/${name}`,
});

function snapshot(credentials: TlsCredentialInfo[]): RuntimeSnapshot {
  const routes = [
    route("https.443.a.gw.foo", "httpbin.example.com", "SIMPLE", "httpbin-credential"),
    route("https.443.b.gw.foo", "*.example.com", "MUTUAL", "hello-credential"),
  ];
  return {
    ...EMPTY_SNAPSHOT,
    routes: Object.fromEntries(routes.map((r) => [r.name, r])),
    credentials: Object.fromEntries(credentials.map((c) => [c.name, c])),
  };
}

const NAMES = ["https.443.a.gw.foo", "https.443.b.gw.foo"];
const handlers = { onSecure: () => {}, onError: () => {} };

Deno.test("GatewayTls.select: the server of the SNI, MUTUAL only with its CA, none for an unknown SNI", () => {
  const tls = new GatewayTls(handlers);
  const s = snapshot([
    credential("httpbin-credential", httpbin),
    credential("hello-credential", hello),
    credential("hello-credential-cacert", null, ca.certPem),
  ]);
  const a = tls.select(s, NAMES, "httpbin.example.com");
  assert.ok(a.ok && "context" in a);
  assert.equal(a.context.routeName, "https.443.a.gw.foo");
  assert.equal(a.context.mutual, false);
  const b = tls.select(s, NAMES, "helloworld.example.com");
  assert.ok(b.ok && "context" in b);
  assert.equal(b.context.routeName, "https.443.b.gw.foo");
  assert.equal(b.context.mutual, true);
  assert.deepEqual(tls.select(s, NAMES, "other.org"), {
    ok: false,
    reason: 'no HTTPS server for SNI "other.org"',
  });
  assert.deepEqual(tls.select(s, NAMES, undefined), { ok: false, reason: "no HTTPS server for SNI (none)" });
  const noCa = snapshot([credential("hello-credential", hello)]);
  assert.deepEqual(tls.select(noCa, NAMES, "helloworld.example.com"), {
    ok: false,
    reason: "https.443.b.gw.foo: client CA kubernetes://hello-credential-cacert not received",
  });
});

Deno.test("GatewayTls.select: built once per credential version; a broken update keeps the last good", () => {
  const reported: string[] = [];
  const tls = new GatewayTls({ ...handlers, onBuildError: (_route, reason) => reported.push(reason) });
  const first = snapshot([credential("httpbin-credential", httpbin)]);
  const a = tls.select(first, NAMES, "httpbin.example.com");
  const again = tls.select(
    snapshot([credential("httpbin-credential", httpbin)]),
    NAMES,
    "httpbin.example.com",
  );
  assert.ok(a.ok && "context" in a && again.ok && "context" in again);
  assert.equal(again.context, a.context, "same credential: same server");
  assert.equal(tls.builds, 1);
  const rotated = tls.select(
    snapshot([credential("httpbin-credential", hello)]),
    NAMES,
    "httpbin.example.com",
  );
  assert.ok(rotated.ok && "context" in rotated);
  assert.notEqual(rotated.context.server, a.context.server, "a new certificate: a new server");
  const broken = tls.select(
    snapshot([credential("httpbin-credential", { certPem: hello.certPem, keyPem: "garbage" })]),
    NAMES,
    "httpbin.example.com",
  );
  assert.ok(broken.ok && "context" in broken);
  assert.equal(broken.context, rotated.context, "a credential that does not load keeps the last good");
  tls.select(
    snapshot([credential("httpbin-credential", { certPem: hello.certPem, keyPem: "garbage" })]),
    NAMES,
    "httpbin.example.com",
  );
  assert.deepEqual(reported, [
    "https.443.a.gw.foo: credential does not load: the private key is not a PEM private key",
  ], "reported once");
  const fresh = new GatewayTls(handlers).select(
    snapshot([credential("httpbin-credential", { certPem: hello.certPem, keyPem: "garbage" })]),
    NAMES,
    "httpbin.example.com",
  );
  assert.equal(fresh.ok, false);
});

Deno.test("peerSans: node's subjectaltname string", () => {
  assert.deepEqual(
    peerSans("DNS:a.example.com, URI:spiffe://cluster.local/ns/foo/sa/bar, IP Address:10.0.0.1"),
    {
      uris: ["spiffe://cluster.local/ns/foo/sa/bar"],
      all: ["a.example.com", "spiffe://cluster.local/ns/foo/sa/bar", "10.0.0.1"],
    },
  );
  assert.deepEqual(peerSans(undefined), { uris: [], all: [] });
});
