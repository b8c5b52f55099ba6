/**
 * Inbound TCP with real sockets: every PeerAuthentication mode, the L4 AuthorizationPolicy rules
 * (each defence checked with raw bytes: the application must see nothing), half-close and a large
 * transfer through mutual TLS, protocol dispatch (declared, detected, and HTTP/2 carried as TCP by a
 * listener built without an HTTP/2 handler).
 */
import assert from "node:assert/strict";
import type { PortMtls, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { certificateInfo, makeCa, makeLeaf, snapshotOf, withPortProtocol } from "./test_support.ts";
import {
  collect,
  mtlsClient,
  plainClient,
  type Received,
  sha256Hex,
  type TcpProxy,
  withTcpProxy,
} from "./tcp_test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/tcp-echo";
const CLIENT_ID = "spiffe://cluster.local/ns/bar/sa/sleep";
const OTHER_ID = "spiffe://cluster.local/ns/baz/sa/curl";

const ca = await makeCa("Mesh Root CA");
const serverCert = certificateInfo(await makeLeaf(ca, { uris: [SERVER_ID] }), ca, SERVER_ID);
const clientLeaf = await makeLeaf(ca, { uris: [CLIENT_ID] });
const otherLeaf = await makeLeaf(ca, { uris: [OTHER_ID] });

const policy = (name: string, action: string, rules: unknown[]) => ({
  name,
  namespace: "foo",
  action,
  rules,
});

/** A snapshot whose port `appPort` is `protocol` (TCP by default), with `mode` and `policies`. */
function tcpSnapshot(
  mode: PortMtls["mode"],
  policies: Record<string, unknown>[] = [],
  protocol = "TCP",
): (appPort: number) => RuntimeSnapshot {
  return (appPort) => ({
    ...withPortProtocol(snapshotOf(mode, serverCert), appPort, protocol),
    authorizations: Object.fromEntries(policies.map((p) => [`foo/${p.name}`, p])),
  });
}

/** Sends `text` then FIN from a plain or mTLS client and collects the answer. */
function talk(p: TcpProxy, client: "plain" | "mtls" | "other", text: string | Uint8Array): Promise<Received> {
  const s = client === "plain"
    ? plainClient(p.port)
    : mtlsClient(p.port, ca, client === "mtls" ? clientLeaf : otherLeaf);
  const got = collect(s, true);
  s.end(text);
  return within(got, 10_000, `${client} client`);
}

/** The answer of the echo app to `text` followed by FIN. */
const echoed = (text: string) => `${text}\nsha256:${sha256Hex(new TextEncoder().encode(text))}`;

/** Asserts a denied connection: closed without one application byte, the app never connected. */
function assertDenied(p: TcpProxy, r: Received, policyName: string): void {
  assert.equal(r.bytes.length, 0, `no application byte reaches the client (got ${JSON.stringify(r.text)})`);
  assert.equal(p.app.accepted, 0, "the application is never connected");
  assert.equal(p.app.received, 0);
  const denial = p.log.entries.find((e) => e.msg === "connection denied");
  assert.ok(denial, "the denial is logged");
  assert.equal(denial.fields?.policy, policyName);
  assert.equal(p.stats.counters["rbac.denied"], 1);
}

Deno.test("STRICT: a plain-text TCP client gets a reset and the app sees nothing", async () => {
  await withTcpProxy(tcpSnapshot("STRICT"), async (p) => {
    const r = await talk(p, "plain", "PING\r\n");
    assert.equal(r.error, "ECONNRESET");
    assert.equal(r.bytes.length, 0);
    assert.equal(p.app.accepted, 0);
    assert.equal(p.stats.counters.downstream_cx_refused_plaintext_in_strict, 1);
  });
});

Deno.test("STRICT: 8 MiB through mutual TLS byte for byte, the app answers after the client's FIN", async () => {
  await withTcpProxy(tcpSnapshot("STRICT"), async (p) => {
    const payload = crypto.getRandomValues(new Uint8Array(65536));
    const big = new Uint8Array(8 << 20);
    for (let i = 0; i < big.length; i += payload.length) big.set(payload, i);
    big[12345] ^= 0xff;
    const r = await talk(p, "mtls", big);
    const tail = new TextEncoder().encode(`\nsha256:${sha256Hex(big)}`);
    assert.equal(r.bytes.length, big.length + tail.length);
    assert.equal(sha256Hex(r.bytes.subarray(0, big.length)), sha256Hex(big), "echoed byte for byte");
    assert.deepEqual(r.bytes.subarray(big.length), tail, "written by the app after the client's FIN");
    assert.ok(r.ended && r.error === null);
    assert.equal(p.app.received, big.length);
    assert.equal(p.stats.counters["tcp.downstream_cx_rx_bytes_total"], big.length);
    assert.equal(p.stats.counters["tcp.downstream_cx_tx_bytes_total"], big.length + tail.length);
    assert.equal(p.stats.counters.downstream_cx_mtls_total, 1);
    const [series] = p.metrics.snapshot();
    assert.equal(series.opened, 1);
    assert.equal(series.closed, 1);
    assert.equal(series.receivedBytes, big.length);
    assert.equal(series.sentBytes, big.length + tail.length);
    assert.ok(series.labels.includes(CLIENT_ID) && series.labels.includes("tcp"));
  });
});

const FIN_CASES = [["STRICT", "mtls"], ["PERMISSIVE", "mtls"], ["PERMISSIVE", "plain"], [
  "DISABLE",
  "plain",
]] as const;
for (const [mode, client] of FIN_CASES) {
  Deno.test(`${mode}, ${client}: the client's FIN after 1 MiB in 64 KiB writes reaches the app while it connects`, async () => {
    // The client's bytes arrive while the proxy connects to the application. A TLSSocket that buffered
    // 64 KiB unread was stopped by its stream and in Deno 2.9 never reported the FIN: the app got every
    // byte, no FIN, so never answered (the capture lab's step (e) timed out that way under CI load).
    await withTcpProxy(tcpSnapshot(mode), async (p) => {
      for (let i = 0; i < 5; i++) {
        const s = client === "mtls" ? mtlsClient(p.port, ca, clientLeaf) : plainClient(p.port);
        const got = collect(s, true);
        const sent = new Uint8Array(1 << 20);
        for (let at = 0; at < sent.length; at += 65536) {
          s.write(crypto.getRandomValues(sent.subarray(at, at + 65536)));
        }
        s.end();
        const r = await within(got, 10_000, `connection ${i}: the app's answer to the client's FIN`);
        // The proxy's log in the message: a reset seen once under CI-like load (session 11) left no trace.
        const log = JSON.stringify(p.log.entries.slice(-20));
        assert.ok(
          r.ended && r.error === null,
          `connection ${i}: ended ${r.ended}, error ${r.error}; log ${log}`,
        );
        assert.equal(sha256Hex(r.bytes.subarray(0, sent.length)), sha256Hex(sent), `connection ${i}: echoed`);
        const tail = new TextDecoder().decode(r.bytes.subarray(sent.length));
        assert.equal(tail, `\nsha256:${sha256Hex(sent)}`, `connection ${i}: the app's answer to the FIN`);
      }
      assert.equal(p.app.received, 5 << 20);
    });
  });
}

for (const [mode, client] of FIN_CASES) {
  Deno.test(`${mode}, ${client}: the app half-closes first; the client gets its 256 KiB and EOF, then still sends`, async () => {
    const greeting = "g".repeat(256 << 10);
    await withTcpProxy(tcpSnapshot(mode), async (p) => {
      const s = client === "mtls" ? mtlsClient(p.port, ca, clientLeaf) : plainClient(p.port);
      // The client sends first (the ClientHello, or a byte for the listener's first-byte read).
      s.write("c");
      const got = collect(s);
      const eof = new Promise<void>((r) => s.once("end", r));
      await within(eof, 10_000, "the app's FIN at the client");
      assert.equal(p.app.received, 1, "the client's side is still open");
      const sent = new Uint8Array(1 << 20);
      for (let at = 0; at < sent.length; at += 65536) {
        s.write(crypto.getRandomValues(sent.subarray(at, at + 65536)));
      }
      s.end();
      const r = await within(got, 10_000, "the close after the client's FIN");
      assert.equal(r.text, greeting);
      assert.ok(r.ended && r.error === null, `ended ${r.ended}, error ${r.error}`);
      // The client's socket closes once its kernel took the bytes: wait for them at the app.
      const deadline = Date.now() + 10_000;
      while (p.app.received < 1 + sent.length && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 20));
      }
      assert.equal(p.app.received, 1 + sent.length, "every byte the client sent after the app's FIN");
    }, { greeting, greetAndEnd: true });
  });
}

Deno.test("PERMISSIVE takes plain text and mutual TLS on one TCP port", async () => {
  await withTcpProxy(tcpSnapshot("PERMISSIVE"), async (p) => {
    assert.equal((await talk(p, "plain", "hello")).text, echoed("hello"));
    assert.equal((await talk(p, "mtls", "hello")).text, echoed("hello"));
    assert.equal(p.stats.counters.downstream_cx_plaintext_total, 1);
    assert.equal(p.stats.counters.downstream_cx_mtls_total, 1);
  });
});

Deno.test("DISABLE: plain text only, connected at accept (a server-first greeting arrives first)", async () => {
  await withTcpProxy(tcpSnapshot("DISABLE"), async (p) => {
    const s = plainClient(p.port);
    const got = collect(s, true);
    const greeting = await within(new Promise((r) => s.once("data", (c) => r(String(c)))), 5000, "greeting");
    assert.equal(greeting, "220 ready\r\n");
    s.end("QUIT");
    await within(got, 5000, "close");
    // A TLS client's bytes are opaque here: the app sees its ClientHello, the handshake fails.
    const t = mtlsClient(p.port, ca, clientLeaf);
    const r = await within(collect(t, true), 5000, "TLS client");
    assert.notEqual(r.error, null);
    assert.equal(p.app.firstBytes[1]?.[0], 0x16, "the ClientHello reached the app as bytes");
  }, { greeting: "220 ready\r\n" });
});

const DENY_CASES: [string, Record<string, unknown>, "plain" | "mtls"][] = [
  ["principal", { from: [{ source: { principals: ["cluster.local/ns/bar/sa/sleep"] } }] }, "mtls"],
  ["namespace", { from: [{ source: { namespaces: ["bar"] } }] }, "mtls"],
  ["ipBlock", { from: [{ source: { ipBlocks: ["127.0.0.0/8"] } }] }, "plain"],
  ["remoteIpBlock", { from: [{ source: { remoteIpBlocks: ["127.0.0.1"] } }] }, "plain"],
  ["HTTP fields ignored on TCP", { to: [{ operation: { methods: ["GET"], paths: ["/admin"] } }] }, "mtls"],
];

for (const [label, rule, client] of DENY_CASES) {
  Deno.test(`L4 DENY by ${label}: closed at once, the app sees no byte`, async () => {
    await withTcpProxy(tcpSnapshot("PERMISSIVE", [policy("deny", "DENY", [rule])]), async (p) => {
      assertDenied(p, await talk(p, client, "secret"), "foo/deny");
    });
  });
}

Deno.test("L4 DENY by port: only the named destination port", async () => {
  let appPort = 0;
  await withTcpProxy((port) => {
    appPort = port;
    return tcpSnapshot("PERMISSIVE", [
      policy("deny-port", "DENY", [{ to: [{ operation: { ports: [String(port)] } }] }]),
    ])(
      port,
    );
  }, async (p) => {
    assertDenied(p, await talk(p, "mtls", "secret"), "foo/deny-port");
    p.set(
      tcpSnapshot("PERMISSIVE", [
        policy("deny-port", "DENY", [{ to: [{ operation: { ports: [String(appPort + 1)] } }] }]),
      ])(
        appPort,
      ),
    );
    assert.equal((await talk(p, "mtls", "x")).text, echoed("x"), "another port's rule does not apply");
  });
});

Deno.test("L4 ALLOW by principal: that client is relayed, another is closed", async () => {
  const allow = policy("allow-sleep", "ALLOW", [{
    from: [{ source: { principals: [CLIENT_ID.slice(9)] } }],
  }]);
  await withTcpProxy(tcpSnapshot("STRICT", [allow]), async (p) => {
    const denied = await talk(p, "other", "secret");
    assert.equal(denied.bytes.length, 0);
    assert.equal(p.app.accepted, 0);
    assert.equal((await talk(p, "mtls", "hi")).text, echoed("hi"));
    assert.equal(p.stats.counters["rbac.allowed"], 1);
    assert.equal(p.stats.counters["rbac.denied"], 1);
  });
});

Deno.test("L4 ALLOW with only HTTP fields allows nothing on a TCP port", async () => {
  const allow = policy("allow-get", "ALLOW", [{ to: [{ operation: { methods: ["GET"] } }] }]);
  await withTcpProxy(tcpSnapshot("PERMISSIVE", [allow]), async (p) => {
    assertDenied(p, await talk(p, "mtls", "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), "");
    const denial = p.log.entries.find((e) => e.msg === "connection denied");
    assert.match(
      String(denial?.fields?.reason),
      /dropped on TCP for HTTP-only fields: foo\/allow-get rule 0/,
    );
  });
});

Deno.test("auto-detect: an HTTP request takes the HTTP path, other bytes are TCP under L4 rules", async () => {
  const allow = policy("allow-get", "ALLOW", [{ to: [{ operation: { methods: ["GET"] } }] }]);
  await withTcpProxy(tcpSnapshot("PERMISSIVE", [allow], "UNKNOWN"), async (p) => {
    const http = await talk(p, "mtls", "GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.match(http.text, /^HTTP\/1\.1 200 OK/);
    assert.match(http.text, /http path$/);
    const tcp = await talk(p, "mtls", "hello\n");
    assert.equal(tcp.bytes.length, 0, "the HTTP-only ALLOW rule allows nothing on TCP");
    assert.equal(p.app.accepted, 1, "only the HTTP request reached the app");
  });
  await withTcpProxy(tcpSnapshot("PERMISSIVE", [], "UNKNOWN"), async (p) => {
    assert.equal((await talk(p, "mtls", "hello\n")).text, echoed("hello\n"));
    assert.equal((await talk(p, "plain", "hel")).text, echoed("hel"), "a FIN before the bytes decide: TCP");
  });
});

Deno.test("GRPC port: the preface goes to the HTTP/2 path (./http2.ts), never to the TCP relay", async () => {
  const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  await withTcpProxy(tcpSnapshot("STRICT", [], "GRPC"), async (p) => {
    const r = await talk(p, "mtls", preface);
    // The HTTP/2 codec's own SETTINGS frame (type 4 in the frame header's fourth octet), not an echo.
    assert.equal(r.bytes[3], 4, `an HTTP/2 SETTINGS frame (got ${JSON.stringify(r.text)})`);
    assert.equal(p.app.accepted, 0, "no stream was opened: the application is never connected");
    assert.equal(p.stats.counters["tcp.downstream_cx_total"], 0);
  });
});
