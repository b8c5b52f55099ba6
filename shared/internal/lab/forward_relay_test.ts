/**
 * The relay (no root needed: it runs here, in this namespace): a Unix socket to a real TCP server,
 * bytes both ways with half-close (the client's end of stream reaches the server, and the answer
 * still comes back), a failed dial reported, and `<host>:<port>` parsing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseHostPort, relayUnixToTcp } from "./forward_relay.ts";

Deno.test("parseHostPort: host and port, or an error naming the value", () => {
  assert.deepEqual(parseHostPort("127.0.0.1:8080"), { hostname: "127.0.0.1", port: 8080 });
  assert.throws(() => parseHostPort("8080"), /"8080": expected <host>:<port>/);
  assert.throws(() => parseHostPort("a:0"), /"a:0": expected <host>:<port> with a port from 1 to 65535/);
});

Deno.test("relayUnixToTcp: half-close passes through; a refused dial is reported", async () => {
  const dir = await Deno.makeTempDir();
  const server = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  // An echo server that answers only after the client's end of stream: it needs the half-close.
  const serving = (async () => {
    for await (const conn of server) {
      const chunks: Uint8Array[] = [];
      const buf = new Uint8Array(1024);
      for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) chunks.push(buf.slice(0, n));
      const w = (await new Blob(chunks as BlobPart[]).text()).toUpperCase();
      const bytes = new TextEncoder().encode(`got ${w.length}: ${w}`);
      for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done));
      conn.close();
    }
  })().catch(() => {});
  const stop = new AbortController();
  const errors: string[] = [];
  let ready = false;
  const path = join(dir, "relay.sock");
  const relay = relayUnixToTcp(path, `127.0.0.1:${(server.addr as Deno.NetAddr).port}`, {
    signal: stop.signal,
    onReady: () => (ready = true),
    onDialError: (l) => errors.push(l),
  });
  const refusedPath = join(dir, "refused.sock");
  const refused = relayUnixToTcp(refusedPath, "127.0.0.1:1", {
    signal: stop.signal,
    onDialError: (l) => errors.push(l),
  });
  try {
    assert.ok(ready);
    const conn = await Deno.connect({ transport: "unix", path });
    await conn.write(new TextEncoder().encode("hello relay"));
    await conn.closeWrite();
    const answer = await new Response(conn.readable).text();
    assert.equal(answer, "got 11: HELLO RELAY");
    assert.equal(errors.length, 0, errors.join("; "));

    const c2 = await Deno.connect({ transport: "unix", path: refusedPath });
    assert.equal(await new Response(c2.readable).text(), "");
    assert.equal(errors.length, 1);
    assert.match(errors[0], /^cannot connect to 127\.0\.0\.1:1: .*refused/);
  } finally {
    stop.abort();
    await Promise.all([relay, refused]);
    server.close();
    await serving;
    await Deno.remove(dir, { recursive: true });
  }
});
