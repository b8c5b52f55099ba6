import assert from "node:assert/strict";
import { RESOURCE_TYPES } from "../../shared/mod.ts";
import { XdsCache } from "../xds/xds_cache.ts";
import { createMetrics, recordCaExpiry, xdsCacheMetrics } from "./metrics.ts";

/** The value of an unlabelled metric in the Prometheus text (prom-client shows 0 until one is set). */
async function valueOf(text: Promise<string>, name: string): Promise<number | undefined> {
  const line = (await text).split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

Deno.test("recordCaExpiry: root and chain gauges follow the bundle; the *_seconds gauges count down on every scrape", async () => {
  const m = createMetrics();
  const scrape = () => m.registry.metrics();
  assert.equal(await valueOf(scrape(), "ca_server_root_cert_expiry_seconds"), 0, "no CA: 0");

  const rootNotAfter = new Date(Date.now() + 180_000);
  recordCaExpiry(m, { source: "self-signed", rootNotAfter, chainNotAfter: rootNotAfter });
  assert.equal(
    await valueOf(scrape(), "ca_server_root_cert_expiry_timestamp"),
    rootNotAfter.getTime() / 1000,
  );
  const s1 = (await valueOf(scrape(), "ca_server_root_cert_expiry_seconds"))!;
  assert.ok(s1 > 179 && s1 <= 180, `${s1}`);
  assert.equal(
    await valueOf(scrape(), "ca_server_cert_chain_expiry_seconds"),
    0,
    "self-signed: no chain",
  );
  await new Promise((r) => setTimeout(r, 1100));
  const s2 = (await valueOf(scrape(), "ca_server_root_cert_expiry_seconds"))!;
  assert.ok(s1 - s2 >= 1, `live: ${s1} then ${s2}`);

  // A rotation (or a plugged-in CA) moves them.
  const rotated = new Date(Date.now() + 3_600_000);
  const chain = new Date(Date.now() + 600_000);
  recordCaExpiry(m, { source: "plugged-in", rootNotAfter: rotated, chainNotAfter: chain });
  const s3 = (await valueOf(scrape(), "ca_server_root_cert_expiry_seconds"))!;
  assert.ok(s3 > 3599 && s3 <= 3600, `${s3}`);
  assert.equal(await valueOf(scrape(), "ca_server_cert_chain_expiry_timestamp"), chain.getTime() / 1000);
  const c = (await valueOf(scrape(), "ca_server_cert_chain_expiry_seconds"))!;
  assert.ok(c > 599 && c <= 600, `${c}`);
});

Deno.test("xds_cache_* metrics: exported only once DISCO_XDS_CACHE_STATS registers them, counting what the cache reports", async () => {
  const m = createMetrics();
  assert.ok(!(await m.registry.metrics()).includes("xds_cache"), "not collected by default, as Istio");
  const stats = xdsCacheMetrics(m);
  const cache = new XdsCache({ maxEntries: 1, stats });
  const msg = { name: "p", namespace: "foo", action: "ALLOW", rules: [] };
  cache.get(RESOURCE_TYPES.authorization, "foo/a", "foo/a", msg);
  cache.get(RESOURCE_TYPES.authorization, "foo/a", "foo/a", msg);
  cache.get(RESOURCE_TYPES.authorization, "foo/a", "foo/a", { ...msg, action: "DENY" });
  cache.get(RESOURCE_TYPES.authorization, "foo/b", "foo/b", msg);
  const text = await m.registry.metrics();
  for (
    const line of [
      'xds_cache_reads{type="hit"} 1',
      'xds_cache_reads{type="miss"} 3',
      'xds_cache_evictions{type="clear"} 1',
      'xds_cache_evictions{type="size"} 1',
      "xds_cache_size 1",
    ]
  ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
});
