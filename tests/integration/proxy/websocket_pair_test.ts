/**
 * WebSocket (HTTP/1.1 Upgrade) through two real `proxy` programs configured by an in-process meshd
 * under STRICT mutual TLS: the client's upgrade request goes to the client proxy's outbound listener,
 * which routes it by Host, mutual TLS to the server proxy, plain text to a standard-library RFC 6455
 * echo server (./ws_echo_app.py, which answers 400 to a request without `Upgrade: websocket`). On a
 * port whose protocol is `HTTP` and on a port whose protocol is auto-detected (no `protocol`: a ServiceEntry
 * port's name is not read): 101 with the right `Sec-WebSocket-Accept`, then a text and a 300-byte binary message
 * echoed back and a close handshake, in raw bytes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa, startMeshd, strictPairConfig } from "../meshd_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

const HOST = "ws.foo.svc.cluster.local";
// RFC 6455 section 1.3's example key and its accept value.
const KEY = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/** A client-to-server frame (masked, as RFC 6455 requires of clients). */
function clientFrame(opcode: number, payload: Uint8Array): Uint8Array {
  const mask = crypto.getRandomValues(new Uint8Array(4));
  const len = payload.length < 126 ? [payload.length] : [126, payload.length >> 8, payload.length & 255];
  const out = new Uint8Array(2 + len.length - 1 + 4 + payload.length);
  out.set([0x80 | opcode, 0x80 | len[0], ...len.slice(1)]);
  out.set(mask, 1 + len.length);
  payload.forEach((b, i) => (out[5 + len.length + i] = b ^ mask[i % 4]));
  return out;
}

/** A raw-bytes WebSocket client on one connection. */
class RawClient {
  #buf = new Uint8Array(0);
  private constructor(readonly conn: Deno.TcpConn) {}

  static async connect(port: number): Promise<RawClient> {
    return new RawClient(await Deno.connect({ hostname: "127.0.0.1", port }));
  }

  async #more(): Promise<void> {
    const chunk = new Uint8Array(65536);
    const n = await this.conn.read(chunk);
    if (n === null) throw new Error("connection closed by the proxy");
    const next = new Uint8Array(this.#buf.length + n);
    next.set(this.#buf);
    next.set(chunk.subarray(0, n), this.#buf.length);
    this.#buf = next;
  }

  async #take(n: number): Promise<Uint8Array> {
    while (this.#buf.length < n) await this.#more();
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }

  /** Sends the upgrade request; the response head (status line and lower-case headers). */
  async upgrade(authority: string): Promise<{ status: string; headers: Record<string, string> }> {
    await this.conn.write(new TextEncoder().encode(
      `GET /chat HTTP/1.1\r\nHost: ${authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    ));
    let end: number;
    while ((end = new TextDecoder().decode(this.#buf).indexOf("\r\n\r\n")) < 0) await this.#more();
    const [status, ...lines] = new TextDecoder().decode(await this.#take(end + 4)).split("\r\n");
    const headers = Object.fromEntries(
      lines.filter((l) => l.includes(":")).map((
        l,
      ) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
    );
    return { status, headers };
  }

  /** Sends a message and reads the server's next frame: its first byte and payload. */
  async roundTrip(opcode: number, payload: Uint8Array): Promise<{ first: number; payload: Uint8Array }> {
    await this.conn.write(clientFrame(opcode, payload));
    const [first, second] = await this.#take(2);
    assert.equal(second & 0x80, 0, "server frames are not masked");
    let len = second & 0x7f;
    if (len === 126) {
      const ext = await this.#take(2);
      len = (ext[0] << 8) | ext[1];
    }
    return { first, payload: await this.#take(len) };
  }
}

/** Upgrade, a text and a binary message echoed, the close handshake; the status line when not 101. */
async function echoThrough(port: number, authority: string): Promise<string> {
  const client = await RawClient.connect(port);
  try {
    const head = await client.upgrade(authority);
    if (!head.status.startsWith("HTTP/1.1 101 ")) return head.status;
    assert.equal(head.headers["sec-websocket-accept"], ACCEPT);
    assert.equal(head.headers["upgrade"]?.toLowerCase(), "websocket");
    const text = new TextEncoder().encode("hello through the mesh");
    assert.deepEqual(await client.roundTrip(0x1, text), { first: 0x81, payload: text });
    const binary = Uint8Array.from({ length: 300 }, (_, i) => i & 255);
    assert.deepEqual(await client.roundTrip(0x2, binary), { first: 0x82, payload: binary });
    const close = Uint8Array.of(0x03, 0xe8); // 1000 normal closure
    assert.deepEqual(await client.roundTrip(0x8, close), { first: 0x88, payload: close });
    return head.status;
  } finally {
    client.conn.close();
  }
}

Deno.test(requires(commandMissing("python3"), {
  name: "WebSocket through two real proxies under STRICT mTLS: an http port and an auto-detected one",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "ws-pair-" });
    await Deno.mkdir(join(dir, "config"));
    const [httpPort, autoPort, outboundPort, appPort] = [freePort(), freePort(), freePort(), freePort()];
    await Deno.writeTextFile(
      join(dir, "config", "services.yaml"),
      strictPairConfig("ws", [
        `{name: http-ws, number: 9000, targetPort: ${httpPort}, protocol: HTTP}`,
        `{name: chat, number: 9001, targetPort: ${autoPort}}`,
      ]),
    );
    const ca = await startCa(join(dir, "ca"));
    const meshd = await startMeshd(join(dir, "config"), { ca });
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const app = new Deno.Command("python3", {
      args: [new URL("./ws_echo_app.py", import.meta.url).pathname, String(appPort)],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const stdout = app.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const proxies: ProxyProcess[] = [];
    const common = { dir, ca, discoveryAddress: `127.0.0.1:${meshd.securePort}`, namespace: "foo" };
    try {
      const ready = await within(stdout.read(), 10_000, "the echo app");
      assert.match(ready.value ?? "", /^listening/);
      proxies.push(
        await startProxyProcess({
          ...common,
          serviceAccount: "ws",
          workloadEntry: "ws-1",
          labels: "app=ws",
          address: "127.0.0.1",
          args: [
            "--inboundBindAddress=127.0.0.1",
            `--inbound=${httpPort}=127.0.0.1:${appPort}`,
            `--inbound=${autoPort}=127.0.0.1:${appPort}`,
          ],
        }),
        await startProxyProcess({
          ...common,
          serviceAccount: "sleep",
          workloadEntry: "sleep-1",
          labels: "app=sleep",
          address: "127.0.0.2",
          args: [`--outbound=127.0.0.1:${outboundPort}`],
        }),
      );
      // The ws workload becomes proxied (mutual TLS to it) once its proxy's stream reached meshd.
      for (const port of [9000, 9001]) {
        await within(
          (async () => {
            while (!(await echoThrough(outboundPort, `${HOST}:${port}`).catch(String)).includes(" 101 ")) {
              await new Promise((r) => setTimeout(r, 200));
            }
          })(),
          15_000,
          `a first upgrade on port ${port}`,
        );
        assert.equal(await echoThrough(outboundPort, `${HOST}:${port}`), "HTTP/1.1 101 Switching Protocols");
      }
    } finally {
      for (const p of proxies) await p.stop();
      app.kill("SIGKILL");
      await app.status;
      await stdout.cancel().catch(() => {});
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
