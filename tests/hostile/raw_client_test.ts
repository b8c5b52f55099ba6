import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { runBatch } from "./raw_client.ts";
import { statuses } from "./corpus.ts";

/** A local server: answers `GET /close` and closes, says nothing to anything else. */
function server(): { port: number; stop: () => void } {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const c of l) {
      conns.push(c);
      (async () => {
        const buf = new Uint8Array(1024);
        const n = await c.read(buf).catch(() => null);
        if (n && new TextDecoder().decode(buf.subarray(0, n)).startsWith("GET /close")) {
          await c.write(new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"));
          c.close();
        }
      })();
    }
  })();
  return {
    port: (l.addr as Deno.NetAddr).port,
    stop: () => {
      l.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // closed by the server already
        }
      }
    },
  };
}

Deno.test("raw client: a closing answer, a silent peer (idle) and a refused dial, bounded in time", async () => {
  const s = server();
  const b64 = (t: string) => Buffer.from(t).toString("base64");
  try {
    const started = Date.now();
    const [closed, idle, refused] = await runBatch({
      requests: [
        { id: "a", host: "127.0.0.1", port: s.port, data: b64("GET /close HTTP/1.1\r\n\r\n") },
        { id: "b", host: "127.0.0.1", port: s.port, data: b64("GET /silent HTTP/1.1\r\n\r\n") },
        { id: "c", host: "127.0.0.1", port: 1, data: b64("x") },
      ],
      concurrency: 3,
      idleMs: 300,
      totalMs: 2000,
      keep: 4096,
    });
    assert.equal(closed.end, "closed");
    assert.deepEqual(statuses(Buffer.from(closed.response, "base64").toString("latin1")), [400]);
    assert.equal(idle.end, "idle");
    assert.equal(idle.response, "");
    assert.match(refused.end, /^connect: /);
    assert.ok(Date.now() - started < 2000, "the silent peer is left after idleMs");
  } finally {
    s.stop();
  }
});
