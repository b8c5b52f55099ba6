/**
 * kube_ca.ts without an API server: plugged-in files in ROOT_CA_DIR are used without a single API
 * call. Everything that reads or writes Secrets runs against the test API server in
 * tests/integration/meshd/kube_ca_test.ts.
 */
import assert from "node:assert/strict";
import { prepareKubeCa, type SecretApi } from "./kube_ca.ts";
import { pluggedInCa, tempDir } from "./test_support.ts";

const NO_API: SecretApi = { json: () => Promise.reject(new Error("the API must not be called")) };

Deno.test("prepareKubeCa: plugged-in files in ROOT_CA_DIR win, with no API call and nothing written", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await pluggedInCa(dir);
    const before = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    const ca = await prepareKubeCa({
      api: NO_API,
      namespace: "mesh-system",
      rootCaDir: dir,
      useCacertsSecret: false,
      root: { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: 3_600_000 },
      warn: () => assert.fail("no warning expected"),
    });
    assert.equal(ca.caDir, dir);
    assert.equal(ca.onRootsWritten, undefined);
    assert.equal(ca.pullRoots, undefined);
    assert.match(ca.description, /^plugged-in files in /);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), before);
  } finally {
    await cleanup();
  }
});

Deno.test("prepareKubeCa: an API error is not hidden (no root of its own)", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await assert.rejects(
      prepareKubeCa({
        api: {
          json: () => Promise.reject(Object.assign(new Error("GET ...: 403 forbidden"), { statusCode: 403 })),
        },
        namespace: "mesh-system",
        rootCaDir: dir,
        useCacertsSecret: false,
        root: { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: 3_600_000 },
        warn: () => {},
      }),
      /403 forbidden/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)], [], "the private copy is removed");
  } finally {
    await cleanup();
  }
});
