import assert from "node:assert/strict";
import { DEFAULT_PROXY_SETTINGS } from "../../shared/mod.ts";
import type { WorkloadInfo } from "../runtime/snapshot.ts";
import { EMPTY_ADS_CONFIG } from "./ads_client.ts";
import { type AdsConfig, emptyHeld, INSTALL, valuesOf } from "./held_resources.ts";

function workloadInfo(name: string): WorkloadInfo {
  return {
    name,
    namespace: "ns",
    serviceAccount: "default",
    trustDomain: "cluster.local",
    addresses: [],
    labels: {},
    proxied: true,
    ports: {},
    inboundMtls: [],
    defaultMtls: { port: 0, mode: "PERMISSIVE", policy: "", scope: "" },
    settings: DEFAULT_PROXY_SETTINGS,
  };
}

Deno.test("valuesOf: the held values by name, in name order", () => {
  const held = new Map([["b", { value: 2 }], ["a", { value: 1 }], ["c", { value: 3 }]]);
  assert.deepEqual(Object.entries(valuesOf(held)), [["a", 1], ["b", 2], ["c", 3]]);
});

Deno.test("INSTALL: the workload is the proxy's own, else the only one sent; none removes it", () => {
  const workload = (name: string) => ({ version: "1", value: workloadInfo(name) });
  const cases: { held: [string, string][]; key: string; want: string | undefined }[] = [
    { held: [["ns/a", "a"], ["ns/b", "b"]], key: "ns/b", want: "b" },
    { held: [["ns/a", "a"]], key: "ns/other", want: "a" },
    { held: [], key: "ns/a", want: undefined },
  ];
  for (const c of cases) {
    const next: AdsConfig = { ...EMPTY_ADS_CONFIG, workload: workloadInfo("old") };
    INSTALL.workload(next, new Map(c.held.map(([k, n]) => [k, workload(n)])), c.key);
    assert.equal(next.workload?.name, c.want, JSON.stringify(c));
  }
});

Deno.test("emptyHeld: a map for every subscribed kind", () => {
  assert.deepEqual(Object.keys(emptyHeld()).sort(), Object.keys(INSTALL).sort());
});
