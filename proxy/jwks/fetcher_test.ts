/**
 * The proxy's JWKS fetcher against real servers on loopback: the providers meshd marks PROXY
 * fetched (others not), a registry host reached at its endpoint (plain text, and mutual
 * TLS with secure naming when the endpoint is proxied), errors for a registry host without the port
 * or without endpoints, counters and status.
 */
import assert from "node:assert/strict";
import tls from "node:tls";
import { keySetText, startJwksServer, until } from "../../shared/internal/jwks/test_support.ts";
import { certificateInfo, makeCa, makeLeaf } from "../inbound/test_support.ts";
import type { RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { type DialContext, PROXY_JWKS_USER_AGENT, ProxyJwksFetcher } from "./fetcher.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

const compact = (text: string) => JSON.stringify(JSON.parse(text));

function policies(providers: Record<string, unknown>[]): RuntimeSnapshot["jwtPolicies"] {
  return { "foo/jwt": { name: "jwt", namespace: "foo", providers } };
}

const proxied = (uri: string) => ({
  issuer: "i",
  jwks: "",
  jwksUri: uri,
  jwksFetcher: "PROXY",
  jwksRefreshIntervalMs: 60_000,
  jwksFetchTimeoutMs: 2000,
});

function service(
  host: string,
  port: number,
  endpoint?: Partial<ServiceInfo["endpoints"][number]>,
): ServiceInfo {
  const endpoints = endpoint
    ? [endpointInfo({ workload: "idp/jwks-1", ports: { "80": port }, ...endpoint })]
    : [];
  return serviceInfo({
    name: "jwks",
    namespace: "idp",
    hosts: [host],
    ports: [{ number: 80, targetPort: port }],
    endpoints,
  });
}

function fetcher(context: DialContext) {
  let changes = 0;
  const f = new ProxyJwksFetcher({ context: () => context, onChange: () => changes++, retryInitialMs: 50 });
  return { f, changes: () => changes };
}

Deno.test("ProxyJwksFetcher fetches the PROXY providers' jwksUris only, and keeps their keys by URI", async () => {
  const srv = startJwksServer();
  srv.state.body = await keySetText("k1");
  const { f, changes } = fetcher({ services: {} });
  const meshdFetched = {
    issuer: "m",
    jwks: '{"keys":[]}',
    jwksUri: "https://idp/keys",
    jwksFetcher: "MESHD",
  };
  try {
    f.sync(policies([proxied(srv.url), meshdFetched]));
    assert.deepEqual(f.status().sources.map((s) => [s.source, s.state]), [[srv.url, "FETCHING"]]);
    assert.deepEqual(f.keys(), new Map());
    await until(() => changes() === 1, "the first fetch");
    assert.deepEqual(f.keys(), new Map([[srv.url, compact(srv.state.body)]]));
    assert.deepEqual(srv.state.userAgents, [PROXY_JWKS_USER_AGENT]);
    const status = f.status();
    assert.deepEqual(status.counters, { success: 1, failed: 0 });
    assert.equal(status.sources[0].state, "OK");
    f.sync({});
    assert.deepEqual(f.status().sources, []);
  } finally {
    f.sync({});
    await srv.stop();
  }
});

Deno.test("ProxyJwksFetcher reaches a registry host at its endpoint; wrong port or no endpoint is an error", async () => {
  const srv = startJwksServer();
  srv.state.body = await keySetText("k1");
  const host = "jwks.idp.svc.cluster.local";
  const good = fetcher({ services: { "idp/jwks": service(host, srv.port, {}) } });
  const noEndpoint = fetcher({ services: { "idp/jwks": service(host, srv.port) } });
  try {
    good.f.sync(policies([proxied(`http://${host}/keys`), proxied(`http://${host}:8080/keys`)]));
    noEndpoint.f.sync(policies([proxied(`http://${host}/keys`)]));
    await until(() => good.changes() === 1 && good.f.status().counters.failed >= 1, "both sources tried");
    await until(() => noEndpoint.f.status().counters.failed >= 1, "the endpoint-less source tried");
    const [onPort80, onPort8080] = [`http://${host}/keys`, `http://${host}:8080/keys`].map((uri) =>
      good.f.status().sources.find((s) => s.source === uri)!
    );
    assert.equal(onPort80.state, "OK");
    assert.equal(onPort8080.state, "FAILING");
    assert.match(
      onPort8080.lastError!,
      /service idp\/jwks \(jwks\.idp\.svc\.cluster\.local\) has no port 8080/,
    );
    assert.match(noEndpoint.f.status().sources[0].lastError!, /service idp\/jwks has no endpoint/);
  } finally {
    good.f.sync({});
    noEndpoint.f.sync({});
    await srv.stop();
  }
});

Deno.test("ProxyJwksFetcher uses mutual TLS with secure naming to a proxied endpoint", async () => {
  const ca = await makeCa("Mesh Root CA");
  const serverId = "spiffe://cluster.local/ns/idp/sa/jwks";
  const clientId = "spiffe://cluster.local/ns/foo/sa/httpbin";
  const serverLeaf = await makeLeaf(ca, { uris: [serverId] });
  const clientLeaf = await makeLeaf(ca, { uris: [clientId] });
  const body = await keySetText("k1");
  const peers: string[] = [];
  const server = tls.createServer({
    cert: serverLeaf.certPem,
    key: serverLeaf.keyPem,
    ca: ca.pem,
    requestCert: true,
    rejectUnauthorized: true,
  }, (socket) => {
    peers.push(String(socket.getPeerCertificate()?.subjectaltname));
    socket.once("data", () => {
      socket.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
  }).listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const port = (server.address() as { port: number }).port;
  const host = "jwks.idp.svc.cluster.local";
  const context = (identity: string): DialContext => ({
    services: { "idp/jwks": service(host, port, { proxied: true, identity }) },
    certificate: certificateInfo(clientLeaf, ca, clientId),
  });
  const right = fetcher(context(serverId));
  const wrong = fetcher(context("spiffe://cluster.local/ns/idp/sa/other"));
  try {
    right.f.sync(policies([proxied(`http://${host}/keys`)]));
    wrong.f.sync(policies([proxied(`http://${host}/keys`)]));
    await until(() => right.changes() === 1 && wrong.f.status().counters.failed >= 1, "both fetchers");
    assert.equal(right.f.status().sources[0].keyCount, 1);
    assert.ok(peers.includes(`URI:${clientId}`), `the proxy presented its certificate: ${peers}`);
    assert.match(wrong.f.status().sources[0].lastError!, /upstream identity mismatch/);
  } finally {
    right.f.sync({});
    wrong.f.sync({});
    await within(
      new Promise((r) => server.close(r)),
      5000,
      "the JWKS server closed (the fetchers hold no connection)",
    );
  }
});
