/**
 * Validation of configuration text: YAML stream → documents → kinds → findings. This is what
 * `meshctl validate` and meshd's config store both run, so they accept and reject the same input.
 *
 * @module
 */
import { formatFieldPath, type Severity } from "../api/finding.ts";
import { lookupKind } from "../api/kinds.ts";
import type { MeshResource } from "../api/mesh_resource.ts";
import { validateResource } from "../api/validate_resource.ts";
import { isSecretDocument, parseTlsSecret } from "../credentials/secret.ts";
import { parseYamlDocuments } from "./yaml_documents.ts";

/** The largest configuration file accepted, in bytes (Kubernetes' own object limit is 1.5 MiB). */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** One problem, located as precisely as the input allows. */
export interface ValidationIssue {
  /** The file name as given, or `-` for standard input. */
  file: string;
  /** Zero-based index of the document in a multi-document stream; undefined for file-level problems. */
  documentIndex?: number;
  /** 1-based line; undefined when the problem concerns the file as a whole. */
  line?: number;
  /** `Kind namespace/name` of the resource, when it got that far. */
  resource?: string;
  /** The field, e.g. `spec.jwtRules[0].issuer`; empty for the whole document. */
  field: string;
  /** Why it is wrong. */
  message: string;
  /** Errors reject the resource; warnings do not. */
  severity: Severity;
}

/** A document that passed validation (it may still carry warnings). */
export interface ValidResource {
  /** The resource as parsed, typed by kind: test `kind` to read `spec` as that kind's spec type. */
  resource: MeshResource;
  /** Where it came from. */
  source: { file: string; documentIndex: number; line: number };
}

/** What validating one file or stream found. */
export interface ValidationResult {
  /** The documents that are valid mesh resources. */
  resources: ValidResource[];
  /** Documents that are not mesh resources (e.g. a Deployment), skipped with the reason. */
  skipped: { documentIndex: number; line: number; reason: string }[];
  /** Every error and warning. */
  issues: ValidationIssue[];
}

/** Options of {@link validateText}. */
export interface ValidateTextOptions {
  /** The mesh root namespace; default mesh-system. */
  rootNamespace?: string;
  /** Namespace for documents that name none (as `kubectl apply -n`); default `default`. */
  defaultNamespace?: string;
}

/**
 * Validates a YAML (or JSON) stream of mesh resources.
 *
 * @param text the file's content
 * @param file the name used in every issue
 * @returns the valid resources, the skipped documents and every issue; never throws on bad input
 */
export function validateText(
  text: string,
  file: string,
  options: ValidateTextOptions = {},
): ValidationResult {
  const result: ValidationResult = { resources: [], skipped: [], issues: [] };
  const fileIssue = (message: string) => result.issues.push({ file, field: "", message, severity: "error" });
  if (text.length > MAX_CONFIG_BYTES) {
    fileIssue(
      `file is ${(text.length / 1048576).toFixed(1)} MiB; the limit is ${MAX_CONFIG_BYTES / 1048576} MiB`,
    );
    return result;
  }
  if (text.includes("\u0000")) {
    fileIssue("binary data: the file contains NUL bytes, so it is not YAML text");
    return result;
  }
  if (text.trim() === "") {
    fileIssue("empty file: no YAML documents");
    return result;
  }
  const docs = parseYamlDocuments(text);
  let nonEmpty = 0;
  for (const doc of docs) {
    const at = { file, documentIndex: doc.index };
    for (const e of doc.syntaxErrors) {
      result.issues.push({
        ...at,
        line: e.line,
        field: "",
        message: `invalid YAML: ${e.message}`,
        severity: "error",
      });
    }
    if (doc.syntaxErrors.length > 0) continue;
    if (doc.value === undefined || doc.value === null) continue;
    nonEmpty++;
    const v = doc.value;
    if (!isMap(v)) {
      result.issues.push({
        ...at,
        line: doc.line,
        field: "",
        message: `a resource must be a map with apiVersion, kind, metadata and spec; got ${
          Array.isArray(v) ? "a list" : typeof v
        }`,
        severity: "error",
      });
      continue;
    }
    const { apiVersion, kind } = v;
    if (typeof apiVersion !== "string" || apiVersion === "" || typeof kind !== "string" || kind === "") {
      const missing = ["apiVersion", "kind"].filter((f) => typeof v[f] !== "string" || v[f] === "");
      for (const f of missing) {
        result.issues.push({
          ...at,
          line: doc.lineOf([f]),
          field: f,
          message: v[f] === undefined ? "required field is missing" : "must be a non-empty string",
          severity: "error",
        });
      }
      continue;
    }
    // Gateway credentials (`kubectl create secret tls ... -o yaml`) are the one core kind understood.
    const found = isSecretDocument(apiVersion, kind)
      ? { status: "ok" as const, definition: undefined }
      : lookupKind(apiVersion, kind);
    if (found.status === "foreign") {
      result.skipped.push({ documentIndex: doc.index, line: doc.line, reason: found.reason });
      continue;
    }
    if (found.status !== "ok") {
      result.issues.push({
        ...at,
        line: doc.lineOf([found.status === "unsupported-kind" ? "kind" : "apiVersion"]),
        field: found.status === "unsupported-kind" ? "kind" : "apiVersion",
        message: found.reason,
        severity: "error",
      });
      continue;
    }
    const meta = v.metadata;
    if (isMap(meta) && meta.namespace === undefined && options.defaultNamespace) {
      meta.namespace = options.defaultNamespace;
    }
    const resourceName = `${kind} ${
      isMap(meta) && typeof meta.namespace === "string" ? meta.namespace : "default"
    }/${isMap(meta) && typeof meta.name === "string" ? meta.name : "?"}`;
    const findings = found.definition === undefined
      ? parseTlsSecret(v).findings
      : validateResource(found.definition, v, { rootNamespace: options.rootNamespace });
    for (const f of findings) {
      result.issues.push({
        ...at,
        line: doc.lineOf(f.path),
        resource: resourceName,
        field: formatFieldPath(f.path),
        message: f.message,
        severity: f.severity,
      });
    }
    if (!findings.some((f) => f.severity === "error")) {
      result.resources.push({
        // The one narrowing of validation: the document passed the schema of the kind it names, and
        // MeshResource's member for that kind is the type generated from that same schema.
        resource: v as MeshResource,
        source: { file, documentIndex: doc.index, line: doc.line },
      });
    }
  }
  if (nonEmpty === 0 && result.issues.length === 0) {
    fileIssue("no YAML documents: the file holds only comments or ---");
  }
  return result;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Formats an issue as one line: `file:line: document N: Kind ns/name: field: reason`.
 * Document numbers in the text are 1-based, as editors count; `documentIndex` stays 0-based.
 */
export function formatIssue(issue: ValidationIssue): string {
  const parts = [issue.line === undefined ? issue.file : `${issue.file}:${issue.line}`];
  if (issue.documentIndex !== undefined) parts.push(`document ${issue.documentIndex + 1}`);
  if (issue.resource) parts.push(issue.resource);
  if (issue.field) parts.push(issue.field);
  return `${issue.severity}: ${parts.join(": ")}: ${issue.message}`;
}
