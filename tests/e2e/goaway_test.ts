/**
 * denoland/deno#36788 (Deno aborts inside nghttp2 while a session handles a GOAWAY): a real meshd
 * process and the proxy agent's real ADS client. meshd must survive proxies that connect and exit
 * (their connections are left to the kernel), and a proxy must survive meshd restarts (meshd exits
 * without sending GOAWAY) and keep its config meanwhile. The heavy version is
 * tests/bench/goaway_stress.ts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AdsClient } from "../../proxy/agent/ads_client.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { SERVICE, waitFor } from "../integration/meshd_support.ts";
import { startMeshdProcess as startMeshd } from "./e2e_support.ts";
import { processDeadline } from "../../shared/internal/testing/deadline.ts";

async function withDir(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "goaway-test-" });
  await Deno.mkdir(`${dir}/config`);
  await Deno.writeTextFile(`${dir}/config/service.yaml`, SERVICE);
  try {
    await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const node = (i: number) => ({ ip: `10.1.0.${i % 250}`, name: `httpbin-${i}`, namespace: "foo" });

Deno.test("meshd survives 200 proxies that connect, take their config and exit", async () => {
  await withDir(async (dir) => {
    const port = freePort();
    const meshd = await startMeshd(dir, port);
    let exited: Deno.CommandStatus | undefined;
    meshd.child.status.then((s) => (exited = s));
    try {
      // Proxies as the proxy process ends: AdsClient.stop({exiting: true}), then the process exits (the
      // bench's `agent-exit` client: 50 clients, 4 at a time, per process).
      for (let batch = 0; batch < 4 && !exited; batch++) {
        const deadline = processDeadline(120_000, `goaway_stress.ts batch ${batch}`);
        const out = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            new URL("../bench/goaway_stress.ts", import.meta.url).pathname,
            ...[
              "--client",
              "agent-exit",
              "--address",
              `127.0.0.1:${port}`,
              "--n",
              "50",
              "--first",
              `${batch * 50}`,
            ],
          ],
          stdout: "piped",
          stderr: "piped",
          signal: deadline.signal,
        }).output();
        deadline.end();
        const text = new TextDecoder().decode(out.stdout);
        assert.ok(out.success, `batch ${batch} failed: ${text}${new TextDecoder().decode(out.stderr)}`);
        assert.match(text, /^n 50$/m, `batch ${batch}: not every proxy got its config`);
      }
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(
        exited,
        undefined,
        `meshd died (${JSON.stringify(exited)}):\n${meshd.output().slice(-2000)}`,
      );
      assert.equal((meshd.output().match(/info\tads\tconnected /g) ?? []).length, 200);
    } finally {
      // stop() also waits until meshd's output pipes are drained, so no read outlives the test.
      await meshd.stop();
    }
  });
});

Deno.test("a proxy survives 3 meshd restarts, keeps its config meanwhile and reconnects", async () => {
  await withDir(async (dir) => {
    const port = freePort();
    let connects = 0;
    const ads = new AdsClient({
      address: `127.0.0.1:${port}`,
      node: node(1),
      plaintext: true,
      backoff: { initialMs: 50, maxMs: 500 },
      hooks: { onConnect: () => connects++ },
    });
    let meshd = await startMeshd(dir, port);
    try {
      ads.start();
      const host = "httpbin.foo.svc.cluster.local";
      for (let round = 1; round <= 3; round++) {
        await waitFor(
          () => connects === round && Object.keys(ads.config.services).length > 0,
          20_000,
          "config",
        );
        // Idle on the connection for a while (keepalive pings flow), as a proxy does between pushes.
        await new Promise((r) => setTimeout(r, 1500));
        meshd.child.kill("SIGTERM");
        const status = await meshd.child.status;
        assert.equal(
          status.code,
          0,
          `meshd did not stop cleanly (${JSON.stringify(status)}):\n${meshd.output()}`,
        );
        await meshd.stop();
        await waitFor(() => !ads.connected, 5000, "the client to see meshd go");
        assert.ok(
          JSON.stringify(ads.config.services).includes(host),
          `round ${round}: the config was dropped while meshd was away`,
        );
        meshd = await startMeshd(dir, port);
      }
      await waitFor(() => connects === 4, 20_000, "the 4th connection");
    } finally {
      await ads.stop();
      await meshd.stop();
    }
  });
});
