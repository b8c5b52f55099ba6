import assert from "node:assert/strict";
import net from "node:net";
import { listenIpv6Loopback } from "./loopback6.ts";

function logInto(lines: string[]) {
  const line = (msg: string, f?: Record<string, unknown>) => lines.push(`${msg} ${JSON.stringify(f)}`);
  return { debug: line, info: line, warn: line, error: line };
}

/** A listener holding a free [::1] port; its port and a closer. */
async function holder(): Promise<{ port: number; close(): Promise<void> }> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "::1", r));
  return { port: (s.address() as net.AddressInfo).port, close: () => new Promise((r) => s.close(() => r())) };
}

Deno.test("listenIpv6Loopback: accepts on [::1]; a taken configured port throws; a taken picked port is logged", async () => {
  const taken = await holder();
  try {
    const lines: string[] = [];
    await assert.rejects(
      listenIpv6Loopback(taken.port, { port: taken.port }, () => {}, logInto(lines)),
      /EADDRINUSE/,
    );
    assert.equal(await listenIpv6Loopback(taken.port, { port: 0 }, () => {}, logInto(lines)), undefined);
    assert.match(lines.join("\n"), /not on \[::1\], IPv6 connections are not captured .*EADDRINUSE/);
  } finally {
    await taken.close();
  }
  const free = await holder();
  await free.close();
  const accepted = Promise.withResolvers<string>();
  const server = await listenIpv6Loopback(free.port, { port: free.port }, (raw) => {
    accepted.resolve(String(raw.localAddress));
    raw.destroy();
  }, logInto([]));
  assert.ok(server);
  const client = net.connect(free.port, "::1");
  client.on("error", () => {});
  assert.equal(await accepted.promise, "::1");
  client.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});
