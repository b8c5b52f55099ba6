/**
 * The config store on a real file system with a real Deno.watchFs (meshd issue, "2. Config
 * store"). Every wait is bounded (waitFor); fixed delays appear only where a test proves that
 * nothing happens.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigStore } from "./mod.ts";
import { delay, peerAuthentication as pa, waitFor, withStore } from "./test_support.ts";

const A = "PeerAuthentication/foo/a";
const B = "PeerAuthentication/foo/b";
const C = "PeerAuthentication/foo/c";

Deno.test("initial scan: every config file, recursively, in one revision; snapshot frozen", async () => {
  const serviceEntry = {
    apiVersion: "networking.istio.io/v1",
    kind: "ServiceEntry",
    metadata: { name: "ext", namespace: "bar" },
    spec: { hosts: ["api.example.com"], ports: [{ number: 443, name: "https", protocol: "TLS" }] },
  };
  await withStore({
    "a.yaml": `${pa("foo", "a")}---\n${pa("foo", "b")}`,
    "sub/b.yml":
      "apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata:\n  name: deny\nspec: {}\n",
    "sub/deep/c.json": JSON.stringify(serviceEntry),
    "README.md": "not config",
    "notes.txt": "kind: PeerAuthentication",
  }, (h) => {
    const snap = h.store.snapshot();
    assert.equal(snap.revision, 1);
    assert.deepEqual(h.keys(), ["AuthorizationPolicy/default/deny", A, B, "ServiceEntry/bar/ext"]);
    assert.deepEqual(h.changes, [{ revision: 1, added: h.keys(), updated: [], removed: [] }]);
    assert.deepEqual(snap.byKey[B].source, { file: h.path("a.yaml"), documentIndex: 1, line: 10 });
    assert.equal(snap.byKey["ServiceEntry/bar/ext"].source.file, h.path("sub/deep/c.json"));
    assert.ok(Object.isFrozen(snap) && Object.isFrozen(snap.resources) && Object.isFrozen(snap.byKey));
    assert.ok(Object.isFrozen(snap.byKey[A]) && Object.isFrozen(snap.byKey[A].resource.metadata));
    assert.throws(() => (snap.resources as unknown[]).push(1), TypeError);
    assert.equal(h.store.snapshot(), snap, "the same object until something changes");
    assert.deepEqual(h.rejected, []);
  });
});

Deno.test("create: a new file is added in a new revision, with a change event", async () => {
  await withStore({}, async (h) => {
    assert.equal(h.store.snapshot().revision, 0);
    await h.write("a.yaml", pa("foo", "a"));
    await waitFor(() => h.keys().includes(A), "a.yaml to load");
    assert.deepEqual(h.changes, [{ revision: 1, added: [A], updated: [], removed: [] }]);
    assert.equal(h.store.snapshot().revision, 1);
  });
});

Deno.test("modify: an edited file updates its resource", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    await h.write("a.yaml", pa("foo", "a", "PERMISSIVE"));
    await waitFor(() => h.mode(A) === "PERMISSIVE", "the new mode");
    assert.deepEqual(h.changes.at(-1), { revision: 2, added: [], updated: [A], removed: [] });
  });
});

Deno.test("delete: a deleted file's resources go away", async () => {
  await withStore(
    { "a.yaml": `${pa("foo", "a")}---\n${pa("foo", "b")}`, "c.yaml": pa("foo", "c") },
    async (h) => {
      await Deno.remove(h.path("a.yaml"));
      await waitFor(() => !h.keys().includes(A), "a.yaml's resources to go");
      assert.deepEqual(h.keys(), [C]);
      assert.deepEqual(h.changes.at(-1), { revision: 2, added: [], updated: [], removed: [A, B] });
    },
  );
});

Deno.test("rename into the directory: the file is added", async () => {
  const outside = await Deno.makeTempDir({ prefix: "config_store_outside_" });
  try {
    await Deno.writeTextFile(join(outside, "a.yaml"), pa("foo", "a"));
    await withStore({}, async (h) => {
      await Deno.rename(join(outside, "a.yaml"), h.path("moved-in.yaml"));
      await waitFor(() => h.keys().includes(A), "the moved-in file to load");
      assert.equal(h.store.snapshot().byKey[A].source.file, h.path("moved-in.yaml"));
    });
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("rename out of the directory: the file's resources go away", async () => {
  const outside = await Deno.makeTempDir({ prefix: "config_store_outside_" });
  try {
    await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
      await Deno.rename(h.path("a.yaml"), join(outside, "a.yaml"));
      await waitFor(() => h.keys().length === 0, "the moved-out file's resources to go");
      assert.deepEqual(h.changes.at(-1)?.removed, [A]);
    });
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("rename within the directory: the resource stays, now from the new file", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    await Deno.rename(h.path("a.yaml"), h.path("renamed.yaml"));
    await waitFor(() => h.store.snapshot().byKey[A]?.source.file === h.path("renamed.yaml"), "the rename");
    assert.ok(h.changes.every((c) => !c.removed.includes(A)), "never removed in between");
  });
});

Deno.test("save by rename, as vim does: probe file, backup rename, new file, backup deleted", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    // Synchronous calls, as fast as an editor: the whole burst lands in one coalescing window.
    Deno.writeTextFileSync(h.path("4913"), "");
    Deno.removeSync(h.path("4913"));
    Deno.renameSync(h.path("a.yaml"), h.path("a.yaml~"));
    Deno.writeTextFileSync(h.path("a.yaml"), pa("foo", "a", "DISABLE"));
    Deno.removeSync(h.path("a.yaml~"));
    await waitFor(() => h.mode(A) === "DISABLE", "the saved version");
    assert.deepEqual(h.changes.slice(1), [{ revision: 2, added: [], updated: [A], removed: [] }]);
    assert.deepEqual(h.rejected, []);
  });
});

Deno.test("save by rename: a temporary file written, then renamed over the file", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    Deno.writeTextFileSync(h.path(".a.yaml.tmp"), pa("foo", "a", "PERMISSIVE"));
    Deno.renameSync(h.path(".a.yaml.tmp"), h.path("a.yaml"));
    await waitFor(() => h.mode(A) === "PERMISSIVE", "the saved version");
    assert.deepEqual(h.changes.slice(1), [{ revision: 2, added: [], updated: [A], removed: [] }]);
  });
});

Deno.test("delete then create: one update, the resource never goes away", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    Deno.removeSync(h.path("a.yaml"));
    Deno.writeTextFileSync(h.path("a.yaml"), pa("foo", "a", "DISABLE"));
    await waitFor(() => h.mode(A) === "DISABLE", "the re-created file");
    assert.deepEqual(h.changes.slice(1), [{ revision: 2, added: [], updated: [A], removed: [] }]);
  });
});

Deno.test("an invalid edit keeps the last good version and reports file, line and field", async () => {
  await withStore({ "a.yaml": `${pa("foo", "a")}---\n${pa("foo", "b")}` }, async (h) => {
    // Document 1 broken, document 2 edited validly: the edit applies, the broken one keeps its last good.
    await h.write("a.yaml", `${pa("foo", "a", "STRICTT")}---\n${pa("foo", "b", "DISABLE")}`);
    await waitFor(() => h.rejected.length > 0 && h.mode(B) === "DISABLE", "the rejection and the edit");
    assert.deepEqual(h.rejected.map((i) => [i.file, i.line, i.field, i.severity, i.resource]), [
      [h.path("a.yaml"), 8, "spec.mtls.mode", "error", "PeerAuthentication foo/a"],
    ]);
    assert.equal(h.mode(A), "STRICT", "the last good version stays in force");
    assert.ok(
      h.logs.includes(
        `error: rejected: ${h.path("a.yaml")}:8: document 1: PeerAuthentication foo/a: spec.mtls.mode: ` +
          `must be one of UNSET, DISABLE, PERMISSIVE, STRICT; got the string "STRICTT"`,
      ),
      h.logs.join("\n"),
    );
    assert.ok(
      h.logs.some((l) => l.startsWith(`warning: ${A}: its document in ${h.path("a.yaml")} is now invalid`)),
      h.logs.join("\n"),
    );
    assert.deepEqual(h.changes.slice(1), [{ revision: 2, added: [], updated: [B], removed: [] }]);

    // Fixed: the new version replaces the last good one.
    await h.write("a.yaml", `${pa("foo", "a", "PERMISSIVE")}---\n${pa("foo", "b", "DISABLE")}`);
    await waitFor(() => h.mode(A) === "PERMISSIVE", "the fixed version");
    assert.equal(h.rejected.length, 1);

    // Broken as a whole (invalid YAML), then deleted: kept while broken, gone with the file.
    await h.write("a.yaml", "apiVersion: [\n");
    await waitFor(() => h.rejected.length === 2, "the syntax error");
    assert.equal(h.rejected[1].line, 2);
    assert.deepEqual(h.keys(), [A, B]);
    await Deno.remove(h.path("a.yaml"));
    await waitFor(() => h.keys().length === 0, "the deletion");
  });
});

Deno.test("a brand-new invalid file adds nothing and is reported", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    await h.write("bad.yaml", pa("foo", "b", "STRICTT"));
    await waitFor(() => h.rejected.length > 0, "the rejection");
    assert.deepEqual(h.rejected.map((i) => [i.file, i.line, i.field]), [[
      h.path("bad.yaml"),
      8,
      "spec.mtls.mode",
    ]]);
    assert.deepEqual(h.keys(), [A]);
    assert.equal(h.store.snapshot().revision, 1);
  });
});

Deno.test("the same bytes are not validated or reported twice", async () => {
  await withStore({ "bad.yaml": pa("foo", "b", "STRICTT") }, async (h) => {
    assert.equal(h.rejected.length, 1);
    await h.write("bad.yaml", pa("foo", "b", "STRICTT"));
    await h.write("barrier.yaml", pa("foo", "c")); // events are processed in order: once this is in, so is the rewrite
    await waitFor(() => h.keys().includes(C), "the barrier file");
    assert.equal(h.rejected.length, 1);
  });
});

Deno.test("conflict: the first file loaded wins, the warning names both, the other takes over", async () => {
  await withStore(
    { "1-first.yaml": pa("foo", "a"), "2-second.yaml": pa("foo", "a", "DISABLE") },
    async (h) => {
      assert.equal(h.mode(A), "STRICT");
      const first = h.path("1-first.yaml");
      const second = h.path("2-second.yaml");
      assert.ok(
        h.logs.includes(
          `warning: ${A} is defined in both ${first} (line 1) and ${second} (line 1); ${first} was loaded first ` +
            `and stays in force, ${second} is ignored until ${first} no longer defines it`,
        ),
        h.logs.join("\n"),
      );
      await h.write("2-second.yaml", pa("foo", "a", "PERMISSIVE"));
      await h.write("barrier.yaml", pa("foo", "c"));
      await waitFor(() => h.keys().includes(C), "the barrier file");
      assert.equal(h.mode(A), "STRICT", "editing the shadowed file changes nothing");
      await Deno.remove(first);
      await waitFor(() => h.mode(A) === "PERMISSIVE", "the second file to take over");
      assert.equal(h.store.snapshot().byKey[A].source.file, second);
      assert.ok(h.logs.includes(`warning: ${A}: ${second} is now in force (${first} no longer defines it)`));
      assert.deepEqual(h.changes.at(-1), { revision: 3, added: [], updated: [A], removed: [] });
    },
  );
});

Deno.test("non-mesh documents are skipped, not rejected", async () => {
  const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec: {}\n";
  await withStore(
    { "mixed.yaml": `${deployment}---\n${pa("foo", "a")}`, "k8s.yaml": deployment },
    (h) => {
      assert.deepEqual(h.keys(), [A]);
      assert.deepEqual(h.rejected, []);
      assert.ok(
        h.logs.includes(
          `info: ${h.path("k8s.yaml")}:1: document 1: skipped: apps/v1 Deployment is not a mesh resource`,
        ),
      );
    },
  );
});

Deno.test("a 50 MB file is rejected by its size, as is binary data; last good versions stay", async () => {
  await withStore({ "big.yaml": pa("foo", "a") }, async (h) => {
    // Sparse: 50 MB on paper, nothing on disk, and reading it would be the bug.
    await Deno.truncate(h.path("big.yaml"), 50 * 1024 * 1024);
    await waitFor(() => h.rejected.length > 0, "the size rejection");
    assert.deepEqual(h.rejected.map((i) => [i.file, i.line, i.field, i.message]), [
      [h.path("big.yaml"), undefined, "", "file is 50.0 MiB; the limit is 4 MiB"],
    ]);
    assert.deepEqual(h.keys(), [A], "the last good version stays");
    await h.write("bin.yaml", "\u0000\u0001binary");
    await Deno.writeFile(h.path("latin1.yaml"), new Uint8Array([0x6b, 0x3a, 0xe9, 0xff]));
    await waitFor(() => h.rejected.length === 3, "the binary rejections");
    assert.deepEqual(h.rejected.slice(1).map((i) => [i.file, i.message]), [
      [h.path("bin.yaml"), "binary data: the file contains NUL bytes, so it is not YAML text"],
      [h.path("latin1.yaml"), "binary data: the file is not UTF-8 text"],
    ]);
  });
});

Deno.test("nested directories: a new tree, a renamed tree, a removed tree", async () => {
  await withStore({}, async (h) => {
    // Created in one go: the watcher may report only the top directory, so it must be walked.
    Deno.mkdirSync(h.path("team/prod/security"), { recursive: true });
    Deno.writeTextFileSync(h.path("team/prod/security/a.yaml"), pa("foo", "a"));
    Deno.writeTextFileSync(h.path("team/prod/b.yaml"), pa("foo", "b"));
    await waitFor(() => h.keys().length === 2, "the new tree");
    await h.write("team/prod/security/deeper/c.yaml", pa("foo", "c"));
    await waitFor(() => h.keys().length === 3, "a file in a new subdirectory");

    await Deno.rename(h.path("team"), h.path("team2"));
    await waitFor(
      () => h.store.snapshot().byKey[A]?.source.file === h.path("team2/prod/security/a.yaml"),
      "rename",
    );
    assert.deepEqual(h.keys(), [A, B, C]);

    await Deno.remove(h.path("team2/prod"), { recursive: true });
    await waitFor(() => h.keys().length === 0, "the removed tree");
    assert.deepEqual(h.rejected, []);
  });
});

Deno.test("ignored: dotfiles, dot directories, swap and backup files, vim's 4913, other extensions", async () => {
  await withStore({}, async (h) => {
    const bad = pa("foo", "b", "STRICTT");
    for (const name of [".a.yaml", ".a.yaml.swp", "a.yaml.swp", "a.yaml~", "4913", "a.yaml.tmp", "a.txt"]) {
      await h.write(name, bad);
    }
    await h.write(".git/config.yaml", bad);
    await h.write("barrier.yaml", pa("foo", "c"));
    await waitFor(() => h.keys().includes(C), "the barrier file");
    assert.deepEqual(h.keys(), [C]);
    assert.deepEqual(h.rejected, []);
  });
});

Deno.test("a Kubernetes ConfigMap mount: the ..data symlink swap is picked up", async () => {
  await withStore({ "..v1/a.yaml": pa("foo", "a") }, async (h) => {
    await Deno.symlink("..v1", h.path("..data"));
    await Deno.symlink("..data/a.yaml", h.path("a.yaml"));
    await waitFor(() => h.mode(A) === "STRICT", "the mounted file");
    await h.write("..v2/a.yaml", pa("foo", "a", "PERMISSIVE"));
    await Deno.symlink("..v2", h.path("..data_tmp"));
    await Deno.rename(h.path("..data_tmp"), h.path("..data"));
    await waitFor(() => h.mode(A) === "PERMISSIVE", "the swapped version");
  });
});

Deno.test("onChange: revisions grow by one, unsubscribe works, a failing listener is logged", async () => {
  await withStore({}, async (h) => {
    const seen: number[] = [];
    const unsubscribe = h.store.onChange((c) => seen.push(c.revision));
    h.store.onChange(() => {
      throw new Error("boom");
    });
    await h.write("a.yaml", pa("foo", "a"));
    await waitFor(() => seen.length === 1, "the first change");
    unsubscribe();
    await h.write("b.yaml", pa("foo", "b"));
    await waitFor(() => h.changes.length === 2, "the second change");
    assert.deepEqual(seen, [1]);
    assert.deepEqual(h.changes.map((c) => c.revision), [1, 2]);
    assert.ok(h.logs.includes("error: a config change listener failed: boom"));
  });
});

Deno.test("stop() releases the watcher: later changes are not seen; stop is idempotent", async () => {
  await withStore({ "a.yaml": pa("foo", "a") }, async (h) => {
    await h.store.stop();
    await h.write("b.yaml", pa("foo", "b"));
    await delay(200); // four coalescing windows: a running watcher would have loaded b.yaml by now
    assert.deepEqual(h.keys(), [A]);
    assert.equal(h.store.snapshot().revision, 1);
    await h.store.stop();
  });
  // The test sanitizers (ops, resources) fail this test if a watcher or a timer were left behind.
});

Deno.test("start() on a missing directory fails and leaves nothing running", async () => {
  const store = new ConfigStore("/nonexistent/config_store_test", {
    logger: { error() {}, warn() {}, info() {} },
  });
  await assert.rejects(store.start(), Deno.errors.NotFound);
  await store.stop();
});

Deno.test("an edit of resources in force keeps the snapshot sorted and byKey in step, as a fresh load", async () => {
  const many = (mode: string, from: number) =>
    Array.from({ length: 30 }, (_, i) => pa(`ns${(i * 7) % 5}`, `p${from + i}`, mode)).join("---\n");
  await withStore(
    { "a.yaml": many("STRICT", 0), "b.yaml": many("STRICT", 100), "c.yaml": pa("zz", "last") },
    async (h) => {
      // Update-only changes (two resources of b.yaml, then one of a.yaml), then an addition among them.
      await h.write(
        "b.yaml",
        many("STRICT", 100).replace(
          /p(1(?:03|17))\n(.*\n){3} {4}mode: STRICT/g,
          (m) => m.replace("STRICT", "PERMISSIVE"),
        ),
      );
      await waitFor(() => h.mode("PeerAuthentication/ns1/p103") === "PERMISSIVE", "the edit of b.yaml");
      await h.write("a.yaml", many("DISABLE", 0));
      await waitFor(() => h.mode("PeerAuthentication/ns0/p0") === "DISABLE", "the edit of a.yaml");
      assert.deepEqual(h.changes.at(-1)?.added, []);
      const fresh = new ConfigStore(h.dir, { logger: { error() {}, warn() {}, info() {} } });
      await fresh.start();
      try {
        const snap = h.store.snapshot();
        const want = fresh.snapshot();
        assert.deepEqual(snap.resources.map((e) => e.key), want.resources.map((e) => e.key));
        assert.deepEqual(snap.resources.map((e) => e.resource), want.resources.map((e) => e.resource));
        for (const e of want.resources) assert.deepEqual(snap.byKey[e.key].resource, e.resource, e.key);
        assert.equal(h.mode("PeerAuthentication/ns4/p117"), "PERMISSIVE");
        assert.equal(h.mode("PeerAuthentication/ns0/p100"), "STRICT");
        assert.ok(Object.isFrozen(snap.resources) && Object.isFrozen(snap.byKey));
      } finally {
        await fresh.stop();
      }
      await h.write("d.yaml", pa("ns3", "added"));
      await waitFor(() => h.keys().includes("PeerAuthentication/ns3/added"), "d.yaml");
      const keys = h.keys();
      assert.deepEqual(keys, [...keys].sort(), "sorted after an addition too");
    },
  );
});
