import assert from "node:assert/strict";
import type { Static } from "@sinclair/typebox";
import type { MTLS_MODES, peerAuthentication } from "../api/schemas/peer_authentication.ts";
import {
  effectivePeerAuthentication,
  type EffectivePeerAuthenticationOptions,
  type MtlsMode,
  type PeerAuthenticationPolicy,
} from "./mod.ts";
import { explain, HTTPBIN, pa } from "./_test_support.ts";

const ERRORS: { name: string; options: Partial<EffectivePeerAuthenticationOptions>; message: RegExp }[] = [
  { name: "port 0", options: { port: 0 }, message: /port must be an integer in 1\.\.65535, got 0/ },
  { name: "port 65536", options: { port: 65536 }, message: /got 65536/ },
  { name: "fractional port", options: { port: 80.5 }, message: /got 80\.5/ },
  {
    name: "non-RFC 3339 timestamp on an applicable policy, even without rivals",
    options: { policies: [pa("foo", "x", { mode: "STRICT", ts: "yesterday" })] },
    message: /foo\/x: creationTimestamp "yesterday" is not an RFC 3339 time/,
  },
  {
    name: "impossible date",
    options: { policies: [pa("foo", "x", { mode: "STRICT", ts: "2024-13-01T00:00:00Z" })] },
    message: /"2024-13-01T00:00:00Z"/,
  },
  {
    name: "unknown workload mode",
    options: { policies: [pa("foo", "x", { mode: "STRIKT" as MtlsMode })] },
    message: /foo\/x: mtls\.mode "STRIKT" is not UNSET, DISABLE, PERMISSIVE or STRICT/,
  },
  {
    name: "unknown port mode on a bound port",
    options: {
      port: 8080,
      policies: [pa("foo", "x", { labels: { app: "httpbin" }, ports: { "8080": "off" as MtlsMode } })],
    },
    message: /portLevelMtls\[8080\]\.mode "off"/,
  },
];

for (const e of ERRORS) {
  Deno.test(`effectivePeerAuthentication throws RangeError: ${e.name}`, () => {
    assert.throws(
      () =>
        effectivePeerAuthentication({
          namespace: "foo",
          labels: HTTPBIN,
          port: 8000,
          portBoundToService: true,
          policies: [],
          ...e.options,
        }),
      (err: unknown) => err instanceof RangeError && e.message.test(err.message),
    );
  });
}

Deno.test("effectivePeerAuthentication: bad data in policies that do not apply is not examined", () => {
  const r = effectivePeerAuthentication({
    namespace: "foo",
    labels: HTTPBIN,
    port: 8000,
    portBoundToService: true,
    policies: [
      pa("bar", "elsewhere", { mode: "BOGUS" as MtlsMode, ts: "never" }),
      pa("foo", "sleep", { mode: "STRICT", labels: { app: "sleep" }, ts: "never" }),
    ],
  });
  assert.equal(explain(r), "PERMISSIVE by default");
});

Deno.test("PeerAuthenticationPolicy accepts any object of the PeerAuthentication schema's type", () => {
  type SchemaPeerAuthentication = Static<typeof peerAuthentication.schema>;
  const fromSchema: SchemaPeerAuthentication = {
    apiVersion: "security.mesh.io/v1",
    kind: "PeerAuthentication",
    metadata: { name: "httpbin", namespace: "foo", creationTimestamp: "2024-01-01T00:00:00Z" },
    spec: {
      selector: { matchLabels: { app: "httpbin" } },
      mtls: { mode: "STRICT" },
      portLevelMtls: { "8080": { mode: "DISABLE" } },
    },
  };
  const policies: PeerAuthenticationPolicy[] = [fromSchema];
  const r = effectivePeerAuthentication({
    namespace: "foo",
    labels: HTTPBIN,
    port: 8080,
    portBoundToService: true,
    policies,
  });
  assert.equal(explain(r), "DISABLE by port foo/httpbin");
});

Deno.test("MtlsMode is exactly the schema's MTLS_MODES", () => {
  type SchemaMode = (typeof MTLS_MODES)[number];
  const forward: SchemaMode[] = [] as MtlsMode[];
  const backward: MtlsMode[] = [] as SchemaMode[];
  assert.deepEqual([forward, backward], [[], []]);
});
