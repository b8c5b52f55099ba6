/**
 * Test support, run as a program inside a capture namespace (proxy/capture/netns_test_support.ts,
 * subnet 10.221.<n>): the outbound listener on 127.0.0.1:15001 in sidecar mode with a snapshot of
 * two services, and the servers behind them on 10.221.<n>.1 (the namespace's own address):
 * - `echo.a` VIP 10.221.<n>.10 port 9000 (TCP) → endpoint 10.221.<n>.1:9001, an echo that ends its
 *   side when the client ends its own (half-close);
 * - `web.a` VIP 10.221.<n>.11 port 80 (HTTP) → endpoint 10.221.<n>.1:8080, an HTTP server answering
 *   `web <method> <path>`;
 * - `h2.a` VIP 10.221.<n>.14 port 80 (HTTP2) → endpoint 127.0.0.1:<any>, the HTTP/2 codec's h2c echo
 *   (../../shared/internal/http2/echo_test_support.ts: `GET` answers `hello <path>`);
 * - 10.221.<n>.1:7000, in no service: an echo for passthrough;
 * - `secure.a` VIP 10.221.<n>.12 port 9000 (TCP) → a proxied endpoint 10.221.<n>.1:9443 (identity
 *   `.../sa/secure`): a mutual TLS echo standing in for its sidecar, presenting that identity and
 *   recording the client's; `impostor.a` VIP .13 → 10.221.<n>.1:9444, whose certificate names
 *   `.../sa/other` while the registry says `.../sa/secure` (secure naming must refuse it).
 * - `disabled.a` (TCP 9000 → the echo on 9001), `disabled-web.a` (HTTP 80 → 8080) and `disabled-h2.a`
 *   (HTTP2 80 → the h2c echo) at VIPs .15, .16, .17: proxied endpoints (`.../sa/secure`) whose server's
 *   PeerAuthentication is DISABLE at that port (`mtlsDisabledPorts`), plain-text servers: automatic
 *   mTLS must dial them in plain text.
 * - `remote.a` VIP 10.221.<n>.18 port 9000 (TCP) → 10.221.<n>.2:9001, served by the test when it
 *   needs an endpoint that is not a local address (a local one goes out through `lo`, uncaptured).
 * Prints `ready`; then, for every line on stdin, the listener's counters and the echo servers'
 * connection counts as one JSON line. Log lines go to stderr. With `6` as third argument every
 * address above is IPv6 instead, `fd00:213:<n>::<host in hex>` (./capture_ipv6_test.ts), e.g. the
 * `echo.a` VIP `fd00:213:<n>::a`.
 *
 *   setpriv --regid 1337 deno run --allow-net [--allow-ffi=<libc>] capture_test_support.ts <n> [REGISTRY_ONLY [6]]
 *
 * @module
 */
import net from "node:net";
import http from "node:http";
import tls from "node:tls";
import { certificateInfo, makeCa, makeLeaf, type TestCa } from "../inbound/test_support.ts";
import { OutboundListener } from "./listener.ts";
import type { OutboundTrafficPolicy } from "./dispatch.ts";
import { EMPTY_SNAPSHOT, type RuntimeSnapshot, type ServiceInfo } from "../runtime/snapshot.ts";
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import { startEchoServer } from "../../shared/internal/http2/echo_test_support.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

function echoServer(host: string, port: number, count: { n: number }): Promise<void> {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    count.n++;
    s.on("error", () => {});
    s.on("data", (d) => s.write(d));
    s.on("end", () => s.end());
  });
  return new Promise((resolve) => server.listen(port, host, resolve));
}

/** A mutual TLS echo presenting `identity`; records each client's URI SANs. */
async function mtlsEcho(
  host: string,
  port: number,
  ca: TestCa,
  identity: string,
  peers: string[],
): Promise<void> {
  const leaf = await makeLeaf(ca, { uris: [identity] });
  const server = tls.createServer({
    cert: leaf.certPem,
    key: leaf.keyPem,
    ca: ca.pem,
    requestCert: true,
    rejectUnauthorized: true,
    allowHalfOpen: true,
  }, (s) => {
    peers.push(String(s.getPeerCertificate()?.subjectaltname));
    s.on("error", () => {});
    s.on("data", (d) => s.write(d));
    s.on("end", () => s.end());
  });
  server.on("tlsClientError", () => {});
  await new Promise<void>((r) => server.listen(port, host, r));
}

function service(
  name: string,
  vip: string,
  port: number,
  protocol: string,
  target: string,
  tport: number,
  identity = "",
  mtlsDisabledPorts: number[] = [],
): ServiceInfo {
  const endpoint = endpointInfo({
    workload: name,
    address: target,
    ports: { [String(port)]: tport },
    identity,
    mtlsDisabledPorts,
  });
  return serviceInfo({
    name,
    namespace: "a",
    addresses: [vip],
    ports: [{ number: port, targetPort: tport, protocol }],
    endpoints: [endpoint],
  });
}

if (import.meta.main) {
  const n = Number(Deno.args[0]);
  const policy = (Deno.args[1] ?? "ALLOW_ANY") as OutboundTrafficPolicy;
  const at = Deno.args[2] === "6"
    ? (host: number) => `fd00:213:${n}::${host.toString(16)}`
    : (host: number) => `10.221.${n}.${host}`;
  const self = at(1);
  const echo = { n: 0 }, passthrough = { n: 0 };
  await echoServer(self, 9001, echo);
  await echoServer(self, 7000, passthrough);
  const ca = await makeCa("capture test root");
  const secureId = "spiffe://cluster.local/ns/a/sa/secure";
  const peers: string[] = [];
  await mtlsEcho(self, 9443, ca, secureId, peers);
  await mtlsEcho(self, 9444, ca, "spiffe://cluster.local/ns/a/sa/other", peers);
  const clientId = "spiffe://cluster.local/ns/a/sa/client";
  const clientLeaf = await makeLeaf(ca, { uris: [clientId] });
  const web = http.createServer((req, res) => res.end(`web ${req.method} ${req.url}`));
  await new Promise<void>((r) => web.listen(8080, self, r));
  const h2 = await startEchoServer();
  const snapshot: RuntimeSnapshot = {
    ...EMPTY_SNAPSHOT,
    revision: 1,
    services: {
      "a/echo": service("echo", at(10), 9000, "TCP", self, 9001),
      "a/web": service("web", at(11), 80, "HTTP", self, 8080),
      "a/secure": service("secure", at(12), 9000, "TCP", self, 9443, secureId),
      "a/impostor": service("impostor", at(13), 9000, "TCP", self, 9444, secureId),
      "a/h2": service("h2", at(14), 80, "HTTP2", "127.0.0.1", h2.port),
      "a/disabled": service("disabled", at(15), 9000, "TCP", self, 9001, secureId, [9000]),
      "a/disabled-web": service("disabled-web", at(16), 80, "HTTP", self, 8080, secureId, [80]),
      "a/disabled-h2": service("disabled-h2", at(17), 80, "HTTP2", "127.0.0.1", h2.port, secureId, [80]),
      // An endpoint outside this namespace (a test's peer namespace serves at(2):9001, if any).
      "a/remote": service("remote", at(18), 9000, "TCP", at(2), 9001),
    },
    certificate: certificateInfo(clientLeaf, ca, clientId),
    workload: {
      name: "client",
      namespace: "a",
      serviceAccount: "client",
      trustDomain: "cluster.local",
      addresses: [self],
      labels: {},
      proxied: true,
      ports: {},
      inboundMtls: [],
      defaultMtls: { port: 0, mode: "PERMISSIVE", policy: "", scope: "" },
      // REGISTRY_ONLY as meshd pushes it (mesh config outboundTrafficPolicy.mode).
      settings: { ...DEFAULT_PROXY_SETTINGS, outboundTrafficPolicy: policy },
    },
  };
  const line = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    console.error(JSON.stringify({ level, msg, ...fields }));
  const listener = new OutboundListener({
    address: "127.0.0.1",
    port: 15001,
    snapshot: () => snapshot,
    log: { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") },
  });
  await listener.start();
  console.log("ready");
  for await (const _ of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    const counters = (listener.observer as unknown as { snapshot(): Record<string, number> }).snapshot();
    console.log(JSON.stringify({ counters, echo: echo.n, passthrough: passthrough.n, peers }));
  }
}
