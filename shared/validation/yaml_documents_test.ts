import assert from "node:assert/strict";
import { parseYamlDocuments } from "./yaml_documents.ts";

const text = `# leading comment
a: 1
---
kind: X
spec:
  rules:
    - from:
        - source: {principals: ["p"]}
      to:
        - operation:
            paths: ["/x"]
  "8080":
    mode: STRICT
---
`;

Deno.test("documents keep their index and first line, empty ones included", () => {
  const docs = parseYamlDocuments(text);
  assert.deepEqual(docs.map((d) => [d.index, d.line]), [[0, 2], [1, 4], [2, 14]]);
  assert.equal(docs[2].value, undefined);
});

const lines: [(string | number)[], number][] = [
  [["kind"], 4],
  [["spec", "rules", 0], 7],
  [["spec", "rules", 0, "to", 0, "operation", "paths", 0], 11],
  [["spec", "rules", 0, "from", 0, "source", "principals"], 8],
  [["spec", "8080", "mode"], 13],
  [["spec", 8080, "mode"], 13],
  // A missing field points at its closest existing ancestor.
  [["spec", "rules", 0, "when"], 7],
  [["spec", "rules", 5], 6],
  [[], 4],
];
for (const [path, line] of lines) {
  Deno.test(`lineOf ${JSON.stringify(path)} is ${line}`, () => {
    assert.equal(parseYamlDocuments(text)[1].lineOf(path), line);
  });
}

Deno.test("syntax errors carry their line and leave the value unset", () => {
  const [doc] = parseYamlDocuments("a: 1\nb: [2\nc: 3\n");
  assert.ok(doc.syntaxErrors.length > 0);
  assert.equal(doc.value, undefined);
  assert.ok(doc.syntaxErrors.every((e) => e.line >= 2), JSON.stringify(doc.syntaxErrors));
});
