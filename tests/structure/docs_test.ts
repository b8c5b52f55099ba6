/**
 * The docs stay navigable: every relative link and every repository path in backticks in every markdown file
 * resolves to a file or folder (and a `#fragment` to a heading of the target), and the root README stays on
 * about two screens. Source: issue 13, "Docs a newcomer reads".
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "../..");

/** The root README's budget: about two screens. */
const README_MAX_LINES = 90;
const README_MAX_BYTES = 8 * 1024;
const README_MAX_LINE_CHARS = 110;

/** Folders never searched for markdown: tools, dependencies, git's own. */
const SKIPPED_DIRS = new Set([".git", ".tools", "node_modules"]);

/** File name endings that make a backticked token a file path worth checking. */
const PATH_EXTENSIONS = /\.(ts|md|yaml|yml|json|py|proto|sh)$/;

/** A repository-relative path token: path characters only, at least one `/`, not absolute. */
const PATH_TOKEN = /^(\.{1,2}\/)*[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*\/?$/;

function markdownFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...markdownFiles(path));
    else if (entry.name.endsWith(".md")) found.push(path);
  }
  return found.sort();
}

/** The text outside fenced code blocks, line numbers kept (fenced lines become empty). */
function withoutFences(text: string): string[] {
  let fence: string | undefined;
  return text.split("\n").map((line) => {
    const marker = line.match(/^\s*(```+|~~~+)/)?.[1];
    if (fence === undefined && marker !== undefined) {
      fence = marker;
      return "";
    }
    if (fence !== undefined) {
      if (marker !== undefined && marker.startsWith(fence[0]) && marker.length >= fence.length) {
        fence = undefined;
      }
      return "";
    }
    return line;
  });
}

/** A piece of a markdown file and where it starts. */
interface Located {
  text: string;
  offset: number;
}

/**
 * Inline code spans, and the prose with them blanked out (offsets kept). A span may wrap onto the next line, as
 * `deno fmt` wraps them, but never across a blank line.
 */
function splitCode(text: string): { code: Located[]; prose: string } {
  const code: Located[] = [];
  const prose = text.replace(
    /(`+)((?:(?!\n\s*\n)[\s\S])*?[^`])\1(?!`)/g,
    (all, ticks: string, inner: string, offset: number) => {
      code.push({ text: inner.trim(), offset: offset + ticks.length });
      return all.replace(/[^\n]/g, " ");
    },
  );
  return { code, prose };
}

/** GitHub's heading anchors of one markdown file (duplicates numbered), plus explicit `<a id|name>`. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const text = readFileSync(file, "utf8");
  for (const line of withoutFences(text)) {
    const heading = line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/)?.[1];
    if (heading !== undefined) {
      const plain = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/`/g, "");
      const base = plain.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/** Why a link target does not resolve, or undefined when it does. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:, ...
  const [rawPath, fragment] = target.split("#", 2);
  const path = decodeURIComponent(rawPath);
  const resolved = path === "" ? file : resolve(dirname(file), path);
  if (!resolved.startsWith(ROOT)) return "points outside the repository";
  if (!existsSync(resolved)) return "no such file or folder";
  if (fragment !== undefined && fragment !== "") {
    if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
      return "a fragment on a non-markdown target";
    }
    if (!anchorsOf(resolved).has(fragment)) return `no heading with anchor #${fragment}`;
  }
  return undefined;
}

/** Top-level entries of the repository: a backticked `meshd/...` names a path even without an extension. */
const TOP_LEVEL = new Set(readdirSync(ROOT).filter((name) => !SKIPPED_DIRS.has(name)));

/** Whether a backticked token looks like a path in this repository (few false positives by design). */
function looksLikeRepoPath(token: string): boolean {
  if (!token.includes("/") || !PATH_TOKEN.test(token)) return false;
  const first = token.replace(/^(\.{1,2}\/)+/, "").split("/")[0];
  if (first.startsWith("..")) return false; // Kubernetes' `..data/`, not a path here
  return PATH_EXTENSIONS.test(token) || token.endsWith("/") || TOP_LEVEL.has(first);
}

/**
 * Whether a backticked path resolves: from the markdown file's folder or any folder above it up to the root,
 * as component READMEs name paths relative to their component (`filters/explanation.ts` in proxy/docs/).
 */
function pathResolves(file: string, token: string): boolean {
  for (let dir = dirname(file); dir.startsWith(ROOT); dir = dirname(dir)) {
    if (existsSync(resolve(dir, token))) return true;
    if (dir === ROOT) break;
  }
  return false;
}

/** Copies of upstream docs: their backticked paths name files of the upstream repositories. */
const UPSTREAM_COPIES = "tests/fixtures/";

/** Every problem of one markdown file, as `file:line: what`. */
function problemsOf(file: string): string[] {
  const problems: string[] = [];
  const name = relative(ROOT, file);
  const text = withoutFences(readFileSync(file, "utf8")).join("\n");
  const where = (offset: number): string => `${name}:${text.slice(0, offset).split("\n").length}`;
  const { code, prose } = splitCode(text);
  const targets = [
    ...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g),
    ...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm),
  ];
  for (const m of targets) {
    const why = brokenLink(file, m[1]);
    if (why !== undefined) problems.push(`${where(m.index)}: link ${m[1]}: ${why}`);
  }
  if (name.startsWith(UPSTREAM_COPIES)) return problems;
  for (const span of code) {
    for (const token of span.text.split(/[\s,;()]+/)) {
      if (!looksLikeRepoPath(token) || pathResolves(file, token)) continue;
      problems.push(
        `${where(span.offset)}: path \`${token}\` does not exist (from this folder or any above it)`,
      );
    }
  }
  return problems;
}

Deno.test("every relative link and backticked repository path in the markdown files resolves", () => {
  const files = markdownFiles(ROOT);
  const problems = files.flatMap(problemsOf);
  assert.deepStrictEqual(
    problems,
    [],
    `${problems.length} broken references in ${files.length} markdown files`,
  );
});

Deno.test("the root README fits on about two screens", () => {
  const text = readFileSync(join(ROOT, "README.md"), "utf8");
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const bytes = new TextEncoder().encode(text).length;
  const wide = lines.flatMap((line, i) =>
    [...line].length > README_MAX_LINE_CHARS ? [`README.md:${i + 1}: ${[...line].length} characters`] : []
  );
  assert.deepStrictEqual(
    { lines: lines.length <= README_MAX_LINES, bytes: bytes <= README_MAX_BYTES, wide },
    { lines: true, bytes: true, wide: [] },
    `README.md has ${lines.length} lines (at most ${README_MAX_LINES}) and ${bytes} bytes (at most ${README_MAX_BYTES})`,
  );
});

Deno.test("the docs checker finds what it is meant to find", () => {
  // A checker that finds nothing would pass on any docs: pin its parts on known inputs.
  assert.deepStrictEqual(splitCode("see `proxy/cli.ts` and [x](y)").code, [{
    text: "proxy/cli.ts",
    offset: 5,
  }]);
  assert.deepStrictEqual(splitCode("a `b\nc` [x](y)").code.map((c) => c.text), ["b\nc"]);
  assert.deepStrictEqual(splitCode("a `b\n\nc` d").code, []);
  assert.deepStrictEqual(withoutFences("a\n```sh\n[x](nope)\n```\nb"), ["a", "", "", "", "b"]);
  assert.deepStrictEqual(looksLikeRepoPath("meshd/xds/generators.ts"), true);
  assert.deepStrictEqual(looksLikeRepoPath("filters/"), true);
  assert.deepStrictEqual(looksLikeRepoPath("/debug/syncz"), false);
  assert.deepStrictEqual(looksLikeRepoPath("..data/"), false);
  assert.deepStrictEqual(looksLikeRepoPath("kubernetes.io/tls"), false);
  assert.deepStrictEqual(looksLikeRepoPath("istio.io/debug/<page>"), false);
  const readme = join(ROOT, "README.md");
  assert.deepStrictEqual(brokenLink(readme, "ARCHITECTURE.md"), undefined);
  assert.deepStrictEqual(brokenLink(readme, "no/such/file.md"), "no such file or folder");
  assert.deepStrictEqual(
    brokenLink(readme, "ARCHITECTURE.md#no-such-heading"),
    "no heading with anchor #no-such-heading",
  );
  assert.deepStrictEqual(brokenLink(readme, "../outside.md"), "points outside the repository");
  assert.deepStrictEqual(pathResolves(join(ROOT, "proxy/docs/admin.md"), "filters/"), true);
  assert.deepStrictEqual(pathResolves(readme, "filters/"), false);
});
