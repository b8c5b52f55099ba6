/**
 * Reads the install manifests of deploy/kubernetes (the files kustomization.yaml lists, in its order)
 * as plain objects, for the checks in manifests_test.ts and for tests that apply them to an API server.
 *
 * @module
 */
import { parse, parseAllDocuments } from "yaml";

/** The folder of the manifests. */
export const MANIFESTS_DIR: URL = new URL("./", import.meta.url);

/** One YAML document of one manifest file. */
export interface ManifestDocument {
  /** File name in deploy/kubernetes. */
  readonly file: string;
  /** 1-based position in the file, as meshctl validate counts. */
  readonly index: number;
  /** The document's text, for shared's validator. */
  readonly text: string;
  readonly object: Record<string, unknown>;
}

/**
 * The files kustomization.yaml lists under `resources`, in order.
 *
 * @throws {Error} when kustomization.yaml is missing or has no list of file names there
 */
export async function manifestFiles(): Promise<string[]> {
  const k = parse(await Deno.readTextFile(new URL("kustomization.yaml", MANIFESTS_DIR)));
  const resources = (k as { resources?: unknown }).resources;
  if (!Array.isArray(resources) || !resources.every((r) => typeof r === "string")) {
    throw new Error("deploy/kubernetes/kustomization.yaml: resources: must be a list of file names");
  }
  return resources;
}

/**
 * Every document of every listed file.
 *
 * @throws {Error} naming the file and document when one does not parse or is not a mapping
 */
export async function loadManifests(): Promise<ManifestDocument[]> {
  const out: ManifestDocument[] = [];
  for (const file of await manifestFiles()) {
    const text = await Deno.readTextFile(new URL(file, MANIFESTS_DIR));
    parseAllDocuments(text).forEach((doc, i) => {
      const where = `deploy/kubernetes/${file}: document ${i + 1}`;
      if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0].message}`);
      const object = doc.toJS();
      if (typeof object !== "object" || object === null || Array.isArray(object)) {
        throw new Error(`${where}: not a mapping`);
      }
      const [start, , end] = doc.range;
      out.push({ file, index: i + 1, text: text.slice(start, end), object });
    });
  }
  return out;
}
