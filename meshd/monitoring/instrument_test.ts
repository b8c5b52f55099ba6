import assert from "node:assert/strict";
import { STRICT, withDiscovery } from "../server/test_support.ts";
import { TYPE_URLS } from "../xds/generators.ts";
import { discoveryObservers } from "./instrument.ts";
import { createMetrics } from "./metrics.ts";

/** `_count` and `_sum` of an unlabelled histogram in the registry's Prometheus text. */
async function histogram(m: ReturnType<typeof createMetrics>, name: string): Promise<[number, number]> {
  const text = await m.registry.metrics();
  const value = (suffix: string) =>
    Number(text.split("\n").find((l) => l.startsWith(`${name}_${suffix} `))?.split(" ")[1] ?? NaN);
  return [value("count"), value("sum")];
}

Deno.test("a push over a real ADS stream moves disco_push_fanout_time and disco_proxy_queue_time", async () => {
  const m = createMetrics();
  await withDiscovery(async ({ dir, connect }) => {
    const p = connect("foo", "httpbin-1");
    const mode = () => p.decoded(TYPE_URLS.workload, "workload", "foo/httpbin-1")?.defaultMtls?.mode;
    await p.until(() => mode() === "PERMISSIVE", 3000);
    // The connection itself triggers a push (the workload becomes proxied): let it finish first.
    await new Promise((r) => setTimeout(r, 400));
    const [fanouts, fanoutSum] = await histogram(m, "disco_push_fanout_time");
    const [queued] = await histogram(m, "disco_proxy_queue_time");

    await Deno.writeTextFile(`${dir}/strict.yaml`, STRICT);
    await p.until(() => mode() === "STRICT", 3000);
    const [fanoutsAfter, fanoutSumAfter] = await histogram(m, "disco_push_fanout_time");
    const [queuedAfter] = await histogram(m, "disco_proxy_queue_time");
    assert.equal(fanoutsAfter, fanouts + 1, "one push, one fan-out observed");
    assert.ok(fanoutSumAfter > fanoutSum, `the fan-out took time: ${fanoutSum} then ${fanoutSumAfter}`);
    assert.ok(fanoutSumAfter - fanoutSum < 3, `and less than the wait: ${fanoutSumAfter - fanoutSum} s`);
    assert.equal(queuedAfter, queued + 1, "its one stream was dequeued once");
  }, { adsHooks: discoveryObservers(m).adsHooks });
});
