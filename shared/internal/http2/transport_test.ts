/**
 * The codec on the sockets the proxy hands it: a node:tls TLSSocket that negotiated ALPN h2 (curl and
 * our client role), and a node:net socket whose first bytes a protocol sniffer already read.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import * as tls from "node:tls";
import { makeCa, makeLeaf } from "../testing/test_ca.ts";
import { processDeadline, within } from "../testing/deadline.ts";
import { commandMissing, requires } from "../testing/prerequisites.ts";
import { Http2Connection } from "./connection.ts";
import { bodyText, get } from "./connection_test_support.ts";
import { echo } from "./echo_test_support.ts";

async function tlsServer(): Promise<{ server: tls.Server; port: number; caPem: string }> {
  const ca = await makeCa("h2 test CA");
  const leaf = await makeLeaf(ca, { dnsNames: ["localhost"], ips: ["127.0.0.1"] });
  const server = tls.createServer(
    { key: leaf.keyPem, cert: leaf.certPem, ALPNProtocols: ["h2"] },
    (socket) => {
      if (socket.alpnProtocol !== "h2") return socket.destroy();
      new Http2Connection(socket, { role: "server", onStream: (s) => void echo(s) });
    },
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as net.AddressInfo).port, caPem: ca.pem };
}

Deno.test(requires(commandMissing("curl"), {
  name: "transport: TLS with ALPN h2: curl --http2",
  async fn() {
    const { server, port, caPem } = await tlsServer();
    const caFile = await Deno.makeTempFile({ suffix: ".pem" });
    try {
      await Deno.writeTextFile(caFile, caPem);
      const deadline = processDeadline(20_000, "curl over TLS");
      const out = await new Deno.Command("curl", {
        args: [
          "-sS",
          "--http2",
          "--cacert",
          caFile,
          "-w",
          " %{http_version}",
          "--data-binary",
          "over tls",
          `https://127.0.0.1:${port}/t`,
        ],
        stdout: "piped",
        stderr: "piped",
        signal: deadline.signal,
      }).output();
      deadline.end();
      assert.equal(new TextDecoder().decode(out.stdout), "over tls 2", new TextDecoder().decode(out.stderr));
    } finally {
      await Deno.remove(caFile);
      await new Promise((r) => server.close(r));
    }
  },
}));

Deno.test("transport: TLS with ALPN h2: the client role", async () => {
  const { server, port, caPem } = await tlsServer();
  try {
    const socket = tls.connect({ host: "127.0.0.1", port, ca: caPem, ALPNProtocols: ["h2"] });
    await within(new Promise((r) => socket.once("secureConnect", r)), 5000, "TLS handshake");
    assert.equal(socket.alpnProtocol, "h2");
    const conn = new Http2Connection(socket, { role: "client" });
    const s = conn.request(get("/tls"), { endStream: true });
    assert.equal(await within(bodyText(s), 5000, "body"), "hello /tls\n");
    conn.close();
    await within(conn.closed, 5000, "closed");
  } finally {
    await new Promise((r) => server.close(r));
  }
});

Deno.test(requires(commandMissing("curl"), {
  name: "transport: a sniffer read the first bytes (1 and 30 octets): initialBytes",
  async fn() {
    for (const sniffed of [1, 30]) {
      const server = net.createServer((socket) => {
        let seen = new Uint8Array(0);
        const onData = (chunk: Uint8Array): void => {
          const all = new Uint8Array(seen.length + chunk.length);
          all.set(seen);
          all.set(chunk, seen.length);
          seen = all;
          if (seen.length < sniffed) return;
          socket.off("data", onData);
          new Http2Connection(socket, { role: "server", initialBytes: seen, onStream: (s) => void echo(s) });
        };
        socket.on("data", onData);
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const deadline = processDeadline(20_000, "curl h2c");
        const out = await new Deno.Command("curl", {
          args: ["-sS", "--http2-prior-knowledge", `http://127.0.0.1:${port}/sniffed`],
          stdout: "piped",
          stderr: "piped",
          signal: deadline.signal,
        }).output();
        deadline.end();
        assert.equal(new TextDecoder().decode(out.stdout), "hello /sniffed\n", `${sniffed} octets sniffed`);
      } finally {
        await new Promise((r) => server.close(r));
      }
    }
  },
}));

Deno.test(requires(commandMissing("curl"), {
  name: "transport: a sniffer paused the socket and unshifted what it read",
  async fn() {
    const server = net.createServer((socket) => {
      socket.once("data", (first: Uint8Array) => {
        socket.pause();
        socket.unshift(first);
        setTimeout(() => new Http2Connection(socket, { role: "server", onStream: (s) => void echo(s) }), 20);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const deadline = processDeadline(20_000, "curl h2c");
      const out = await new Deno.Command("curl", {
        args: ["-sS", "--http2-prior-knowledge", `http://127.0.0.1:${port}/unshifted`],
        stdout: "piped",
        stderr: "piped",
        signal: deadline.signal,
      }).output();
      deadline.end();
      assert.equal(new TextDecoder().decode(out.stdout), "hello /unshifted\n");
    } finally {
      await new Promise((r) => server.close(r));
    }
  },
}));
