/**
 * Multi-document YAML parsing that remembers where every field is, so that an error about
 * `spec.rules[0].to` can name its line. Uses npm:yaml's document model and LineCounter.
 *
 * @module
 */
import { isMap, isScalar, isSeq, LineCounter, type Node, parseAllDocuments } from "yaml";
import type { FieldPath } from "../api/finding.ts";

/** One document of a YAML stream. */
export interface YamlDocument {
  /** Zero-based position in the stream, counting empty documents too. */
  index: number;
  /** First line of the document (1-based). */
  line: number;
  /** The document as plain data; undefined for an empty document. */
  value: unknown;
  /** Syntax errors in this document, each with its line. */
  syntaxErrors: { line: number; message: string }[];
  /**
   * The line (1-based) of the field at `path`, or of its closest existing ancestor when the field
   * is absent (for a missing required field, the line of its parent).
   */
  lineOf(path: FieldPath): number;
}

/** Parses every document of a YAML stream. Never throws on bad YAML: errors are in the result. */
export function parseYamlDocuments(text: string): YamlDocument[] {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [];
  const lineAt = (offset: number) => lineCounter.linePos(offset).line;
  return list.map((doc, index) => {
    const syntaxErrors = doc.errors.map((e) => ({
      line: lineAt(e.pos[0]),
      message: e.message.split("\n")[0],
    }));
    const start = doc.contents?.range?.[0] ?? doc.range?.[0] ?? 0;
    let value: unknown;
    if (syntaxErrors.length === 0) {
      try {
        value = doc.toJS({ maxAliasCount: 100 });
      } catch (e) {
        syntaxErrors.push({ line: lineAt(start), message: (e as Error).message });
      }
    }
    return {
      index,
      line: lineAt(start),
      value: value ?? undefined,
      syntaxErrors,
      lineOf(path: FieldPath): number {
        let node: unknown = doc.contents;
        let line = lineAt(start);
        for (const seg of path) {
          if (isMap(node)) {
            const pair = node.items.find((p) => {
              const k = isScalar(p.key) ? p.key.value : p.key;
              return String(k) === String(seg);
            });
            if (!pair) break;
            const keyNode = pair.key as Node | undefined;
            if (keyNode?.range) line = lineAt(keyNode.range[0]);
            node = pair.value;
          } else if (isSeq(node)) {
            const item = node.items[Number(seg)] as Node | undefined;
            if (!item) break;
            if (item.range) line = lineAt(item.range[0]);
            node = item;
          } else break;
        }
        return line;
      },
    };
  });
}
