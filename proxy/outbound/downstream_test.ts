import assert from "node:assert/strict";
import { latin1 } from "../http/chars.ts";
import type { SocketIo } from "../http/socket_io.ts";
import { concat, RouteUpstream } from "./downstream.ts";
import { DialError, EndpointPool } from "./endpoint_pool.ts";

/** Everything a (canned) connection answers, until it ends; fails after 5 s. */
async function answer(io: SocketIo): Promise<string> {
  let text = "";
  const deadline = Date.now() + 5_000;
  for (;;) {
    const c = io.read();
    if (c === null) return text;
    if (c === undefined) {
      if (Date.now() > deadline) throw new Error("the canned response did not end within 5 s");
      await io.wait();
      continue;
    }
    text += latin1(c, 0, c.length);
  }
}

Deno.test("a local route is answered by a canned response on an in-memory connection", async () => {
  const failures: string[] = [];
  const up = new RouteUpstream((kind) => failures.push(kind));
  up.route = { local: true, status: 301, body: "", location: "https://example.com/x" };
  assert.equal(up.idle(), null);
  const io = await up.connect();
  assert.equal(
    await answer(io),
    "HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: https://example.com/x\r\n" +
      "content-type: text/plain\r\nx-mesh-local-reply: true\r\n\r\n",
  );
  up.route = { local: true, status: 404, body: "no route to nowhere" };
  assert.equal(
    await answer(await up.connect()),
    "HTTP/1.1 404 Not Found\r\ncontent-length: 20\r\ncontent-type: text/plain\r\nx-mesh-local-reply: true\r\n\r\n" +
      "no route to nowhere\n",
  );
  assert.deepEqual(failures, []);
});

Deno.test("a failed dial is reported and answered 502, or 504 for a timeout, with the reason", async () => {
  for (const [kind, status] of [["connect_failure", 502], ["timeout", 504]] as const) {
    const failures: string[][] = [];
    const up = new RouteUpstream((k, reason, target) => failures.push([k, reason, target]));
    const pool = new EndpointPool({
      dial: () => Promise.reject(new DialError(kind, "refused by the test")),
    });
    const endpoint = {
      key: "plain|10.0.0.1:9001",
      address: "10.0.0.1",
      port: 9001,
      mtls: false,
      identity: "",
    };
    up.route = { local: false, pool, endpoint, target: "httpbin 10.0.0.1:9001" };
    const text = await answer(await up.connect());
    assert.match(text, new RegExp(`^HTTP/1.1 ${status} `));
    assert.match(text, new RegExp(`upstream connect error \\(${kind}\\): refused by the test\\n$`));
    assert.deepEqual(failures, [[kind, "refused by the test", "httpbin 10.0.0.1:9001"]]);
    pool.close();
  }
});

Deno.test("concat joins chunks, and returns a single chunk as is", () => {
  const one = new Uint8Array([1, 2]);
  assert.equal(concat([one], 2), one);
  assert.deepEqual(concat([one, new Uint8Array([3])], 3), new Uint8Array([1, 2, 3]));
});
