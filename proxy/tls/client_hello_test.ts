import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { parseClientHello } from "./client_hello.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

/** The first bytes a real TLS client (node:tls, or curl) sends, captured by a plain TCP server. */
async function capture(connect: (port: number) => void): Promise<Uint8Array> {
  const { promise, resolve } = Promise.withResolvers<Uint8Array>();
  const server = net.createServer((s) => {
    const chunks: Uint8Array[] = [];
    s.on("data", (c: Uint8Array) => {
      chunks.push(c);
      const all = new Uint8Array(chunks.reduce((n, x) => n + x.length, 0));
      let o = 0;
      for (const x of chunks) all.set(x, (o += x.length) - x.length);
      if (parseClientHello(all).status !== "more") {
        resolve(all);
        s.destroy();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  connect((server.address() as net.AddressInfo).port);
  const bytes = await within(promise, 5000, "the client's first bytes");
  server.close();
  return bytes;
}

Deno.test("parseClientHello: the server name of node:tls and curl ClientHellos, byte by byte", async () => {
  const hello = await capture((port) => {
    const c = tls.connect({ host: "127.0.0.1", port, servername: "HttpBin.example.com" });
    c.on("error", () => {});
  });
  assert.deepEqual(parseClientHello(hello), { status: "done", sni: "httpbin.example.com", alpn: [] });
  for (const n of [0, 1, 4, 5, hello.length - 1]) {
    assert.deepEqual(parseClientHello(hello.subarray(0, n)), { status: "more" }, `first ${n} bytes`);
  }
  let curl: Deno.ChildProcess | undefined;
  const curled = await capture((port) => {
    curl = new Deno.Command("curl", {
      args: [
        "-s",
        "--max-time",
        "2",
        "--resolve",
        `helloworld.example.com:${port}:127.0.0.1`,
        `https://helloworld.example.com:${port}/`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
  });
  await curl?.status; // curl gives up within its --max-time 2
  const curledHello = parseClientHello(curled);
  assert.equal(curledHello.status, "done");
  if (curledHello.status === "done") {
    assert.equal(curledHello.sni, "helloworld.example.com");
    // curl offers HTTP/2 and HTTP/1.1 by ALPN over https.
    assert.deepEqual(curledHello.alpn, ["h2", "http/1.1"]);
  }
});

Deno.test("parseClientHello: no SNI, plain text and damaged records", async () => {
  const noSni = await capture((port) => {
    // An IP address as host: clients send no server_name.
    const c = tls.connect({ host: "127.0.0.1", port });
    c.on("error", () => {});
  });
  assert.deepEqual(parseClientHello(noSni), { status: "done", sni: undefined, alpn: [] });
  assert.equal(parseClientHello(new TextEncoder().encode("GET / HTTP/1.1\r\n")).status, "invalid");
  const damaged = noSni.slice();
  damaged[5] = 2;
  assert.deepEqual(parseClientHello(damaged), {
    status: "invalid",
    reason: "the first handshake message is not a ClientHello",
  });
  const truncated = noSni.slice(0, 60);
  truncated[3] = 0;
  truncated[4] = 55;
  truncated.set([0, 0, 51], 6);
  assert.deepEqual(parseClientHello(truncated), { status: "invalid", reason: "malformed ClientHello" });
});

Deno.test("parseClientHello: the ALPN list of a node:tls ClientHello, in the client's order", async () => {
  const hello = await capture((port) => {
    const c = tls.connect({
      host: "127.0.0.1",
      port,
      servername: "reviews.default.svc.cluster.local",
      ALPNProtocols: ["istio-peer-exchange", "istio"],
    });
    c.on("error", () => {});
  });
  assert.deepEqual(parseClientHello(hello), {
    status: "done",
    sni: "reviews.default.svc.cluster.local",
    alpn: ["istio-peer-exchange", "istio"],
  });
});

/** A TLS 1.2 style ClientHello record with the given extensions (type, body), built byte by byte. */
function helloWith(extensions: [number, number[]][]): Uint8Array {
  const u16 = (n: number): number[] => [n >> 8, n & 0xff];
  const ext = extensions.flatMap(([type, body]) => [...u16(type), ...u16(body.length), ...body]);
  const body = [
    0x03,
    0x03,
    ...new Array(32).fill(7), // legacy_version, random
    0, // legacy_session_id
    ...u16(2),
    0x13,
    0x01, // cipher_suites
    1,
    0, // compression: null
    ...u16(ext.length),
    ...ext,
  ];
  const handshake = [1, 0, body.length >> 8, body.length & 0xff, ...body];
  return new Uint8Array([0x16, 3, 1, ...u16(handshake.length), ...handshake]);
}

/** An ALPN extension body (RFC 7301 section 3.1) naming `names`. */
function alpnBody(...names: string[]): number[] {
  const list = names.flatMap((n) => [n.length, ...new TextEncoder().encode(n)]);
  return [list.length >> 8, list.length & 0xff, ...list];
}

Deno.test("parseClientHello: ALPN extensions built byte by byte, well formed and hostile", () => {
  const table: { name: string; hello: Uint8Array; want: unknown }[] = [
    {
      name: "istio-peer-exchange",
      hello: helloWith([[16, alpnBody("istio-peer-exchange", "istio")]]),
      want: { status: "done", sni: undefined, alpn: ["istio-peer-exchange", "istio"] },
    },
    {
      name: "h2 only (a proxyless gRPC client, curl)",
      hello: helloWith([[16, alpnBody("h2")]]),
      want: { status: "done", sni: undefined, alpn: ["h2"] },
    },
    {
      name: "no extensions at all",
      hello: helloWith([]),
      want: { status: "done", sni: undefined, alpn: [] },
    },
    {
      name: "an unknown extension before ALPN is skipped",
      hello: helloWith([[0xfe01, [1, 2, 3]], [16, alpnBody("istio-h2")]]),
      want: { status: "done", sni: undefined, alpn: ["istio-h2"] },
    },
    {
      name: "a protocol name longer than its list",
      hello: helloWith([[16, [0, 4, 9, 0x69, 0x73, 0x74, 0x69]]]),
      want: { status: "invalid", reason: "malformed ClientHello" },
    },
    {
      name: "a list length longer than the extension",
      hello: helloWith([[16, [0, 40, 5, ...new TextEncoder().encode("istio")]]]),
      want: { status: "invalid", reason: "malformed ClientHello" },
    },
    {
      name: "an extension length past the extensions block",
      hello: (() => {
        const h = helloWith([[16, alpnBody("istio")]]);
        h[h.length - alpnBody("istio").length - 1] = 0xff; // the ALPN extension's length, low byte
        return h;
      })(),
      want: { status: "invalid", reason: "malformed ClientHello" },
    },
  ];
  for (const { name, hello, want } of table) assert.deepEqual(parseClientHello(hello), want, name);
});
