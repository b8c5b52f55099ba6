import assert from "node:assert/strict";
import { PROXY_CONFIG_ANNOTATION, proxyConfigOverrides } from "./proxy_config_annotation.ts";

const AT = "WorkloadEntry istio-system/gw-1";
const of = (text: string) => proxyConfigOverrides({ [PROXY_CONFIG_ANNOTATION]: text }, AT);

Deno.test("proxy.istio.io/config: gatewayTopology.numTrustedProxies, YAML or JSON", () => {
  assert.deepEqual(of("gatewayTopology:\n  numTrustedProxies: 2\n"), {
    overrides: { numTrustedProxies: 2 },
    warnings: [],
  });
  assert.deepEqual(of('{"gatewayTopology": {"numTrustedProxies": 0}}').overrides, { numTrustedProxies: 0 });
});

Deno.test("proxy.istio.io/config: absent or empty is no override", () => {
  assert.deepEqual(proxyConfigOverrides(undefined, AT), { overrides: {}, warnings: [] });
  assert.deepEqual(proxyConfigOverrides({ other: "x" }, AT), { overrides: {}, warnings: [] });
  assert.deepEqual(of(""), { overrides: {}, warnings: [] });
  assert.deepEqual(of("gatewayTopology: {}").overrides, {});
});

Deno.test("proxy.istio.io/config: fields that have no effect warn", () => {
  assert.deepEqual(
    of("concurrency: 2\ngatewayTopology: {numTrustedProxies: 1, forwardClientCertDetails: SANITIZE}"),
    {
      overrides: { numTrustedProxies: 1 },
      warnings: [
        `${AT} annotation proxy.istio.io/config: field concurrency has no effect`,
        `${AT} annotation proxy.istio.io/config: field gatewayTopology.forwardClientCertDetails has no effect`,
      ],
    },
  );
});

const bad: [string, RegExp][] = [
  [
    "gatewayTopology: {numTrustedProxies: -1}",
    /: gatewayTopology\.numTrustedProxies: -1 is not a whole number from 0 to 255$/,
  ],
  ["gatewayTopology: {numTrustedProxies: '2'}", /: gatewayTopology\.numTrustedProxies: "2" is not/],
  ["gatewayTopology: 2", /annotation proxy\.istio\.io\/config: gatewayTopology: expected a map$/],
  ["- a", /annotation proxy\.istio\.io\/config: expected a map$/],
  ["a: [", /annotation proxy\.istio\.io\/config: invalid YAML/],
];
for (const [text, message] of bad) {
  Deno.test(`proxy.istio.io/config: ${JSON.stringify(text)} is an error naming the workload and field`, () => {
    assert.throws(() => of(text), (e: Error) => e.message.startsWith(AT) && message.test(e.message));
  });
}
