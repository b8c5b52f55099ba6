import assert from "node:assert/strict";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { ApiError } from "./types.ts";

const obj = {
  metadata: { name: "web-1", namespace: "prod", labels: { app: "web", tier: "front" } },
  spec: { nodeName: "n1" },
  status: { phase: "Running" },
};

Deno.test("label selectors: =, ==, !=, in, notin, exists, !exists, and their conjunction", () => {
  const table: [string, boolean][] = [
    ["", true],
    ["app=web", true],
    ["app==web", true],
    ["app=db", false],
    ["app!=db", true],
    ["missing!=x", true],
    ["tier in (front,back)", true],
    ["tier in (back)", false],
    ["tier notin (back)", true],
    ["missing notin (x)", true],
    ["app", true],
    ["missing", false],
    ["!missing", true],
    ["!app", false],
    ["app=web,tier in (front, back),!missing", true],
    ["app=web,tier=back", false],
  ];
  for (const [sel, want] of table) assert.equal(parseLabelSelector(sel)(obj), want, sel);
});

Deno.test("field selectors: metadata.name, metadata.namespace and any dotted path; set-based is refused", () => {
  const table: [string, boolean][] = [
    ["metadata.name=web-1", true],
    ["metadata.name!=web-1", false],
    ["metadata.namespace==prod", true],
    ["metadata.namespace=dev", false],
    ["spec.nodeName=n1,status.phase=Running", true],
    ["spec.missing=", true],
  ];
  for (const [sel, want] of table) assert.equal(parseFieldSelector(sel)(obj), want, sel);
  assert.throws(
    () => parseFieldSelector("metadata.name in (a)"),
    (e) => e instanceof ApiError && e.code === 400,
  );
  assert.throws(() => parseLabelSelector("a b c"), (e) => e instanceof ApiError && e.code === 400);
});
