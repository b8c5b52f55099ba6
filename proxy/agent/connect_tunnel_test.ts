import assert from "node:assert/strict";
import { within } from "../../shared/internal/testing/deadline.ts";
import { startServerNameTunnel } from "./connect_tunnel.ts";

/** Sends `head` (and `then` after the answer's head) and returns all the tunnel sends until it closes. */
function ask(port: number, head: string, then?: string): Promise<string> {
  return within(
    exchange(port, head, then),
    5000,
    `the tunnel's answer to ${JSON.stringify(head.split("\r")[0])}`,
  );
}

async function exchange(port: number, head: string, then?: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(head));
    const buf = new Uint8Array(4096);
    let text = "";
    while (true) {
      const n = await conn.read(buf);
      if (n === null) return text;
      text += new TextDecoder().decode(buf.subarray(0, n));
      if (then && text.endsWith("\r\n\r\n")) {
        await conn.write(new TextEncoder().encode(then));
        then = undefined;
      }
    }
  } finally {
    conn.close();
  }
}

Deno.test("connect_tunnel: only its own client's CONNECT to its one target is tunnelled (raw bytes)", async () => {
  const upstream = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (upstream.addr as Deno.NetAddr).port;
  const received: string[] = [];
  const serving = (async () => {
    for await (const conn of upstream) {
      const buf = new Uint8Array(64);
      const n = await conn.read(buf);
      received.push(new TextDecoder().decode(buf.subarray(0, n ?? 0)));
      await conn.write(new TextEncoder().encode("pong"));
      conn.close();
    }
  })();
  const tunnel = startServerNameTunnel(`127.0.0.1:${port}`, `meshd.mesh-system.svc:${port}`);
  const proxy = tunnel.proxy as { url: string; basicAuth: { username: string; password: string } };
  const tunnelPort = Number(new URL(proxy.url).port);
  const auth = `Proxy-Authorization: Basic ${
    btoa(`${proxy.basicAuth.username}:${proxy.basicAuth.password}`)
  }\r\n`;
  const connect = (target: string, header: string) =>
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${header}\r\n`;
  try {
    // No credentials, wrong credentials, another target: 403, and nothing reaches the upstream.
    assert.match(await ask(tunnelPort, connect(`meshd.mesh-system.svc:${port}`, "")), /^HTTP\/1\.1 403 /);
    assert.match(
      await ask(
        tunnelPort,
        connect(`meshd.mesh-system.svc:${port}`, "Proxy-Authorization: Basic YWdlbnQ6eA==\r\n"),
      ),
      /^HTTP\/1\.1 403 /,
    );
    assert.match(await ask(tunnelPort, connect(`evil.example.com:${port}`, auth)), /^HTTP\/1\.1 403 /);
    assert.match(await ask(tunnelPort, connect(`meshd.mesh-system.svc:22`, auth)), /^HTTP\/1\.1 403 /);
    assert.match(await ask(tunnelPort, `GET / HTTP/1.1\r\nHost: x\r\n${auth}\r\n`), /^HTTP\/1\.1 403 /);
    assert.deepEqual(received, []);
    // Its own client: 200, then the bytes go to the upstream and back.
    const ok = await ask(tunnelPort, connect(`meshd.mesh-system.svc:${port}`, auth), "ping");
    assert.match(ok, /^HTTP\/1\.1 200 Connection established\r\n\r\npong$/);
    assert.deepEqual(received, ["ping"]);
  } finally {
    tunnel.close();
    upstream.close();
    await serving.catch(() => {});
  }
});
