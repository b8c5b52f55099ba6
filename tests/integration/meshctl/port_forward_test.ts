/**
 * Port-forward through the test API server's pods/portforward (WebSocket, v4.channel.k8s.io): bytes
 * both ways, several connections, the errors of a missing pod and of bad credentials.
 */
import assert from "node:assert/strict";
import { defaultOrchFlags, orchClient } from "../../../meshctl/orch/orch_client.ts";
import { openOrchPortForward } from "../../../meshctl/orch/port_forward.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { runningLocalPod, startOrchTestApi } from "./orch_support.ts";

/** A TCP server that answers each read with `echo:` and the bytes. */
function echoServer(): { port: number; stop(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Promise<void>[] = [];
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.push((async () => {
        const buf = new Uint8Array(1024);
        for (;;) {
          const n = await conn.read(buf).catch(() => null);
          if (n === null) break;
          await conn.write(new Uint8Array([...new TextEncoder().encode("echo:"), ...buf.subarray(0, n)]));
        }
        conn.close();
      })());
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async stop() {
      listener.close();
      await accepting;
      await Promise.all(conns);
    },
  };
}

async function roundTrip(address: string, text: string): Promise<string> {
  const [host, port] = address.split(":");
  const conn = await Deno.connect({ hostname: host, port: Number(port) });
  try {
    await conn.write(new TextEncoder().encode(text));
    const buf = new Uint8Array(1024);
    const n = await within(conn.read(buf), 5000, `answer through ${address}`);
    return new TextDecoder().decode(buf.subarray(0, n ?? 0));
  } finally {
    conn.close();
  }
}

Deno.test("port-forward: bytes both ways through pods/portforward to the pod's IP, per connection", async () => {
  const t = await startOrchTestApi();
  const echo = echoServer();
  await runningLocalPod(t, "foo", "echo-1", ["echo"]);
  const flags = { ...defaultOrchFlags(), orchconfig: t.kubeconfig };
  const client = orchClient(flags, {});
  try {
    const forward = await openOrchPortForward(client, "foo", "echo-1", echo.port);
    try {
      assert.equal(await roundTrip(forward.localAddress, "one"), "echo:one");
      assert.equal(await roundTrip(forward.localAddress, "two"), "echo:two");
    } finally {
      await forward.close();
    }
    const upgrades = t.log.filter((e) => e.url.includes("/pods/echo-1/portforward"));
    assert.equal(upgrades.length, 0, "upgrades bypass the request handler's log");
    // A pod that does not exist: the connection ends without an answer.
    const missing = await openOrchPortForward(client, "foo", "nope", echo.port);
    try {
      assert.equal(await roundTrip(missing.localAddress, "x"), "");
    } finally {
      await missing.close();
    }
    // Without valid credentials the server refuses the upgrade (401): nothing comes through.
    const badConfig = `${t.api.dir}/bad-token.yaml`;
    await Deno.writeTextFile(
      badConfig,
      (await Deno.readTextFile(t.kubeconfig)).replace(t.api.server.token, "x"),
    );
    const bad = orchClient({ ...flags, orchconfig: badConfig }, {});
    const refused = await openOrchPortForward(bad, "foo", "echo-1", echo.port);
    try {
      assert.equal(await roundTrip(refused.localAddress, "x"), "");
    } finally {
      await refused.close();
      await bad.close();
    }
  } finally {
    await client.close();
    await echo.stop();
    await t.stop();
  }
});
