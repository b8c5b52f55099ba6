/** httpGet against real servers on loopback: status, size limit, timeout, user agent, and `dial`. */
import assert from "node:assert/strict";
import net from "node:net";
import { httpGet } from "./http_get.ts";
import { startJwksServer } from "./test_support.ts";
import { within } from "../testing/deadline.ts";

Deno.test("httpGet: the body on 200 with the user agent; errors name the URL and the reason", async () => {
  const srv = startJwksServer();
  try {
    srv.state.body = '{"keys":[]}';
    assert.equal(await httpGet(srv.url, { timeoutMs: 2000, userAgent: "ua-test" }), '{"keys":[]}');
    assert.deepEqual(srv.state.userAgents, ["ua-test"]);
    srv.state.status = 404;
    await assert.rejects(
      httpGet(srv.url, { timeoutMs: 2000 }),
      new RegExp(`^Error: ${srv.url}: HTTP status 404$`),
    );
    srv.state.status = 200;
    srv.state.body = "x".repeat(2000);
    await assert.rejects(
      httpGet(srv.url, { timeoutMs: 2000, maxBytes: 1000 }),
      /body larger than 1000 bytes/,
    );
    await assert.rejects(
      httpGet("ftp://127.0.0.1/keys", { timeoutMs: 100 }),
      /scheme ftp: is not http or https/,
    );
    await assert.rejects(httpGet("nope", { timeoutMs: 100 }), /nope: not a URL/);
  } finally {
    await srv.stop();
  }
});

Deno.test("httpGet: a server that never answers times out", async () => {
  const sockets: net.Socket[] = [];
  const silent = net.createServer((s) => sockets.push(s)).listen(0, "127.0.0.1");
  await new Promise((r) => silent.once("listening", r));
  const port = (silent.address() as net.AddressInfo).port;
  try {
    await assert.rejects(
      httpGet(`http://127.0.0.1:${port}/keys`, { timeoutMs: 200 }),
      /no answer within 200 ms/,
    );
  } finally {
    for (const s of sockets) s.destroy();
    await within(
      new Promise((r) => silent.close(r)),
      5000,
      "the silent server closed (the timed-out request left no connection)",
    );
  }
});

Deno.test("httpGet with dial: the request goes over the dialled socket, Host and path from the URL", async () => {
  const srv = startJwksServer();
  srv.state.body = '{"keys":[]}';
  try {
    const url = "http://jwks.foo.svc.cluster.local:8000/keys";
    const body = await httpGet(url, {
      timeoutMs: 2000,
      userAgent: "dialled",
      dial: () =>
        new Promise((resolve, reject) => {
          const s = net.connect({ host: "127.0.0.1", port: srv.port });
          s.once("connect", () => resolve(s));
          s.once("error", reject);
        }),
    });
    assert.equal(body, '{"keys":[]}');
    assert.deepEqual(srv.state.userAgents, ["dialled"]);
    await assert.rejects(
      httpGet(url, { timeoutMs: 2000, dial: () => Promise.reject(new Error("no endpoint")) }),
      /^Error: http:\/\/jwks\.foo\.svc\.cluster\.local:8000\/keys: no endpoint$/,
    );
  } finally {
    await srv.stop();
  }
});
