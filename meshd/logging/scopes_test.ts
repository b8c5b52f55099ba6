import assert from "node:assert/strict";
import {
  LEVEL_RANK,
  LEVELS,
  parseScopedLevels,
  parseScopeList,
  RANK_LEVEL,
  SCOPE_NAMES,
  SCOPES,
} from "./scopes.ts";

Deno.test("scopes: the seed's 43 names, `all` among them but not a logger scope", () => {
  assert.equal(SCOPE_NAMES.length, 43);
  assert.ok((SCOPE_NAMES as readonly string[]).includes("ingress status"));
  assert.equal(SCOPES.length, 42);
  assert.ok(!(SCOPES as readonly string[]).includes("all"));
});

Deno.test("levels: ranks and their inverse agree", () => {
  for (const level of LEVELS) assert.equal(RANK_LEVEL[LEVEL_RANK[level]], level);
});

const levelCases: { text: string; want?: Record<string, string>; error?: RegExp }[] = [
  { text: "", want: {} },
  { text: "ads:debug", want: { ads: "debug" } },
  { text: "ads:debug,ca:error", want: { ads: "debug", ca: "error" } },
  { text: "ingress status:warn", want: { "ingress status": "warn" } },
  { text: "warn", want: Object.fromEntries(SCOPES.map((s) => [s, "warn"])) },
  {
    text: "all:warn,ads:debug",
    want: { ...Object.fromEntries(SCOPES.map((s) => [s, "warn"])), ads: "debug" },
  },
  { text: "adz:debug", error: /^--log_output_level: "adz:debug": unknown scope "adz"; the scopes are "ads"/ },
  {
    text: "ads:verbose",
    error: /^--log_output_level: "ads:verbose": unknown level "verbose"; the levels are debug, info/,
  },
  { text: "verbose", error: /unknown level "verbose"/ },
  { text: "ads:", error: /unknown level ""/ },
];
for (const c of levelCases) {
  Deno.test(`parseScopedLevels: "${c.text}"`, () => {
    const r = parseScopedLevels("--log_output_level", c.text);
    if (c.error) {
      assert.equal(r.errors.length, 1, r.errors.join("\n"));
      assert.match(r.errors[0], c.error);
    } else {
      assert.deepEqual(r.errors, []);
      assert.deepEqual(r.value, c.want);
    }
  });
}

Deno.test("parseScopedLevels: every bad item is reported, not only the first", () => {
  const r = parseScopedLevels("--log_stacktrace_level", "adz:debug,ads:loud,ca:error");
  assert.equal(r.errors.length, 2);
  assert.deepEqual(r.value, { ca: "error" });
});

const listCases: { text: string; want?: string[]; error?: RegExp }[] = [
  { text: "", want: [] },
  { text: "ads,ca", want: ["ads", "ca"] },
  { text: "all", want: [...SCOPES] },
  { text: "ads,nope", error: /^--log_caller: unknown scope "nope"/ },
];
for (const c of listCases) {
  Deno.test(`parseScopeList: "${c.text}"`, () => {
    const r = parseScopeList("--log_caller", c.text);
    if (c.error) assert.match(r.errors.join("\n"), c.error);
    else {
      assert.deepEqual(r.errors, []);
      assert.deepEqual([...r.value], c.want);
    }
  });
}
