import assert from "node:assert/strict";
import { caSource } from "./ca_source.ts";
import { readEnvironment } from "./options/environment.ts";

Deno.test("caSource: with --configDir the CA is file-based; USE_CACERTS_FOR_SELF_SIGNED_CA warns", async () => {
  const warnings: string[] = [];
  const log = { warn: (m: string) => warnings.push(m) };
  const plain = await caSource(undefined, readEnvironment({}).env, "mesh-system", "cluster.local", log);
  assert.deepEqual(plain.start, {});
  assert.equal(plain.description, undefined);
  assert.deepEqual(warnings, []);
  const env = readEnvironment({ USE_CACERTS_FOR_SELF_SIGNED_CA: "true" }).env;
  await caSource(undefined, env, "mesh-system", "cluster.local", log);
  assert.deepEqual(warnings, [
    "USE_CACERTS_FOR_SELF_SIGNED_CA has no effect: --configDir is the config source (no Secrets)",
  ]);
});
