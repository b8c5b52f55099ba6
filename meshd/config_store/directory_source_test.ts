/**
 * The file side of the config store: which names are configuration, reading a file safely,
 * listing a directory, and the watcher's coalescing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { MAX_CONFIG_BYTES } from "../../shared/mod.ts";
import { DirectorySource, isConfigPath, listConfigFiles, readConfigFile } from "./directory_source.ts";
import { waitFor } from "./test_support.ts";

Deno.test("isConfigPath: yaml, yml and json files; no dotfiles, backups, swap or probe files", () => {
  const table: [string, boolean][] = [
    ["a.yaml", true],
    ["a.yml", true],
    ["a.json", true],
    ["A.YAML", true],
    ["team/prod/a.yaml", true],
    ["a.txt", false],
    ["a.yaml~", false],
    ["a.yaml.swp", false],
    [".a.yaml.swp", false],
    [".a.yaml", false],
    [".#a.yaml", false],
    ["#a.yaml#", false],
    ["4913", false],
    ["a.yaml.tmp", false],
    [".git/a.yaml", false],
    ["..data/a.yaml", false],
    ["team/.hidden/a.yaml", false],
    ["", false],
  ];
  for (const [path, expected] of table) assert.equal(isConfigPath(path), expected, path);
});

Deno.test("readConfigFile: text with a content fingerprint; missing; directories; size before reading", async () => {
  const dir = await Deno.makeTempDir({ prefix: "directory_source_test_" });
  try {
    const reads: string[] = [];
    const readFile = (path: string) => {
      reads.push(path);
      return Deno.readFile(path);
    };
    await Deno.writeTextFile(join(dir, "a.yaml"), "kind: x\n");
    await Deno.writeTextFile(join(dir, "b.yaml"), "kind: x\n");
    const a = await readConfigFile(join(dir, "a.yaml"), { readFile });
    const b = await readConfigFile(join(dir, "b.yaml"), { readFile });
    assert.equal(a.status === "text" && a.text, "kind: x\n");
    assert.equal(a.status === "text" && b.status === "text" && a.fingerprint === b.fingerprint, true);
    assert.deepEqual(await readConfigFile(join(dir, "gone.yaml")), { status: "missing" });
    assert.deepEqual(await readConfigFile(dir), { status: "missing" }, "a directory is not a file");

    const big = join(dir, "big.yaml");
    await Deno.writeFile(big, new Uint8Array());
    await Deno.truncate(big, 50 * 1024 * 1024); // sparse
    reads.length = 0;
    const read = await readConfigFile(big, { readFile });
    assert.deepEqual(reads, [], "an oversized file is never read");
    assert.equal(read.status === "error" && read.message, "file is 50.0 MiB; the limit is 4 MiB");

    await Deno.truncate(big, MAX_CONFIG_BYTES);
    assert.equal(
      (await readConfigFile(big, { readFile: () => Promise.resolve(new Uint8Array(10)) })).status,
      "text",
    );
    const grown = await readConfigFile(big, {
      readFile: () => Promise.resolve(new Uint8Array(MAX_CONFIG_BYTES + 1)),
    });
    assert.equal(grown.status, "error", "a file that grew between stat and read is still refused");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("listConfigFiles: recursive, sorted, dot entries skipped, links to files followed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "directory_source_test_" });
  try {
    for (const rel of ["b.yaml", "a/z.json", "a/b/c.yml", ".hidden/x.yaml", "a/.x.yaml", "a/readme.md"]) {
      await Deno.mkdir(join(dir, rel, ".."), { recursive: true });
      await Deno.writeTextFile(join(dir, rel), "x");
    }
    await Deno.symlink(join(dir, "b.yaml"), join(dir, "link.yaml"));
    await Deno.symlink(join(dir, "nowhere.yaml"), join(dir, "dangling.yaml"));
    await Deno.symlink(dir, join(dir, "loop")); // a directory link: not followed
    assert.deepEqual(await listConfigFiles(dir), ["a/b/c.yml", "a/z.json", "b.yaml", "link.yaml"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("DirectorySource: the initial scan is one batch, a burst of events is one batch", async () => {
  const dir = await Deno.makeTempDir({ prefix: "directory_source_test_" });
  const batches: string[][] = [];
  const source = new DirectorySource(dir, {
    onFiles: (files) => {
      batches.push(files.map((f) => f.slice(dir.length + 1)));
      return Promise.resolve();
    },
  });
  try {
    await Deno.writeTextFile(join(dir, "a.yaml"), "x");
    await source.start();
    assert.deepEqual(batches, [["a.yaml"]]);
    for (let i = 0; i < 5; i++) Deno.writeTextFileSync(join(dir, `f${i}.yaml`), "x");
    Deno.removeSync(join(dir, "a.yaml"));
    await waitFor(() => batches.length === 2, "the burst");
    assert.deepEqual(batches[1], ["a.yaml", "f0.yaml", "f1.yaml", "f2.yaml", "f3.yaml", "f4.yaml"]);
  } finally {
    await source.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
