import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { clientHelloSni } from "./client_hello.ts";
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
      if (clientHelloSni(all).status !== "more") {
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

Deno.test("clientHelloSni: the server name of node:tls and curl ClientHellos, byte by byte", async () => {
  const hello = await capture((port) => {
    const c = tls.connect({ host: "127.0.0.1", port, servername: "HttpBin.example.com" });
    c.on("error", () => {});
  });
  assert.deepEqual(clientHelloSni(hello), { status: "done", sni: "httpbin.example.com" });
  for (const n of [0, 1, 4, 5, hello.length - 1]) {
    assert.deepEqual(clientHelloSni(hello.subarray(0, n)), { status: "more" }, `first ${n} bytes`);
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
  assert.deepEqual(clientHelloSni(curled), { status: "done", sni: "helloworld.example.com" });
});

Deno.test("clientHelloSni: no SNI, plain text and damaged records", async () => {
  const noSni = await capture((port) => {
    // An IP address as host: clients send no server_name.
    const c = tls.connect({ host: "127.0.0.1", port });
    c.on("error", () => {});
  });
  assert.deepEqual(clientHelloSni(noSni), { status: "done", sni: undefined });
  assert.equal(clientHelloSni(new TextEncoder().encode("GET / HTTP/1.1\r\n")).status, "invalid");
  const damaged = noSni.slice();
  damaged[5] = 2;
  assert.deepEqual(clientHelloSni(damaged), {
    status: "invalid",
    reason: "the first handshake message is not a ClientHello",
  });
  const truncated = noSni.slice(0, 60);
  truncated[3] = 0;
  truncated[4] = 55;
  truncated.set([0, 0, 51], 6);
  assert.deepEqual(clientHelloSni(truncated), { status: "invalid", reason: "malformed ClientHello" });
});
