import assert from "node:assert/strict";
import { within } from "../../shared/internal/testing/deadline.ts";
import { startTlsTunnel } from "./tls_tunnel.ts";

const ROOT = `-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIUb0o5gmMMm6bnrYhSdIDcNbjSl0owCgYIKoZIzj0EAwIw
-----END CERTIFICATE-----
`;

/** Sends `bytes` in steps (each answered before the next) and returns every answer, until the tunnel closes. */
function talk(port: number, steps: number[][]): Promise<number[][]> {
  return within(exchange(port, steps), 5000, "the tunnel's answers");
}

async function exchange(port: number, steps: number[][]): Promise<number[][]> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const answers: number[][] = [];
  try {
    for (const step of steps) {
      await conn.write(new Uint8Array(step));
      const buf = new Uint8Array(64);
      const n = await conn.read(buf);
      if (n === null) break;
      answers.push([...buf.subarray(0, n)]);
    }
    return answers;
  } finally {
    conn.close();
  }
}

const text = (s: string) => [...new TextEncoder().encode(s)];
const auth = (user: string, pass: string) => [1, user.length, ...text(user), pass.length, ...text(pass)];
const connectTo = (
  host: string,
  port: number,
) => [5, 1, 0, 3, host.length, ...text(host), port >> 8, port & 255];

Deno.test("tls_tunnel: only its own client, authenticated, may CONNECT, and only to its one target (raw bytes)", async () => {
  // Nothing listens at the target: a tunnel that let a request through would answer 5 (refused) after
  // trying node:tls, not 2 (not allowed).
  const tunnel = startTlsTunnel({
    address: "127.0.0.1:9",
    rootsPem: ROOT,
    serverName: "meshd.mesh-system.svc",
  });
  const proxy = tunnel.proxy as { url: string; basicAuth: { username: string; password: string } };
  const port = Number(new URL(proxy.url.replace("socks5h:", "http:")).port);
  const { username, password } = proxy.basicAuth;
  try {
    assert.equal(tunnel.authority, "meshd.mesh-system.svc:9");
    assert.notEqual(password, "", "a random password");
    // No username/password method offered: refused (0xff).
    assert.deepEqual(await talk(port, [[5, 1, 0]]), [[5, 0xff]]);
    // Wrong password, wrong user: authentication fails (1, 1).
    assert.deepEqual(await talk(port, [[5, 1, 2], auth(username, "guess")]), [[5, 2], [1, 1]]);
    assert.deepEqual(await talk(port, [[5, 1, 2], auth("root", password)]), [[5, 2], [1, 1]]);
    // Authenticated, another target (name or port): not allowed (5, 2).
    for (const [host, p] of [["evil.example.com", 9], ["meshd.mesh-system.svc", 22]] as const) {
      const answers = await talk(port, [[5, 1, 2], auth(username, password), connectTo(host, p)]);
      assert.deepEqual(answers.map((a) => a.slice(0, 2)), [[5, 2], [1, 0], [5, 2]], `${host}:${p}`);
    }
    // Authenticated, its target: tried, and refused here only because nothing listens (5, 5).
    const answers = await talk(port, [
      [5, 1, 2],
      auth(username, password),
      connectTo("meshd.mesh-system.svc", 9),
    ]);
    assert.deepEqual(answers.map((a) => a.slice(0, 2)), [[5, 2], [1, 0], [5, 5]]);
    assert.match(tunnel.lastError() ?? "", /ECONNREFUSED|refused/i);
  } finally {
    tunnel.close();
  }
});
