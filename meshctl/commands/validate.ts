/**
 * `meshctl validate -f <files|dirs|->` (meshctl seed, "validate"): checks mesh and Istio policy
 * files offline with the same validator meshd uses. One line per error or warning; exit code 0
 * when every resource is valid, 1 when any error was found.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import {
  formatIssue,
  MAX_CONFIG_BYTES,
  validateText,
  type ValidationIssue,
  type ValidResource,
} from "../../shared/mod.ts";
import { collectStrings } from "../../shared/internal/cli/pflag.ts";
import { globalOptions } from "../global_options.ts";

/** What one run of validate found, summed over all inputs. */
export interface ValidateSummary {
  files: number;
  resources: number;
  skipped: number;
  errors: number;
  warnings: number;
  /** Every issue, in input order. */
  issues: ValidationIssue[];
  /** The valid resources, in input order (analyze runs its analyzers over them). */
  valid: ValidResource[];
}

/** Options of {@link validateInputs}. */
export interface ValidateInputsOptions {
  /** Root namespace for the root-namespace rules. */
  rootNamespace: string;
  /** Namespace given to documents without one. */
  defaultNamespace?: string;
  /** Reads standard input, for `-`. */
  readStdin?: () => Promise<Uint8Array>;
  /** Called with each file's text once it is read (analyze looks for Namespace documents). */
  onText?: (file: string, text: string) => void;
}

/**
 * Validates files, directories (recursively: *.yaml, *.yml, *.json) and `-` (standard input).
 * A file that cannot be read, is too large or is not UTF-8 text is an error line, never a crash.
 */
export async function validateInputs(
  inputs: string[],
  options: ValidateInputsOptions,
): Promise<ValidateSummary> {
  const summary: ValidateSummary = {
    files: 0,
    resources: 0,
    skipped: 0,
    errors: 0,
    warnings: 0,
    issues: [],
    valid: [],
  };
  const add = (issue: ValidationIssue) => {
    summary.issues.push(issue);
    if (issue.severity === "error") summary.errors++;
    else summary.warnings++;
  };
  for (const input of inputs) {
    for (const file of await expand(input, add)) {
      summary.files++;
      const text = await readText(file, options, add);
      if (text === undefined) continue;
      const result = validateText(text, file, {
        rootNamespace: options.rootNamespace,
        defaultNamespace: options.defaultNamespace,
      });
      options.onText?.(file, text);
      summary.resources += result.resources.length;
      summary.valid.push(...result.resources);
      summary.skipped += result.skipped.length;
      result.issues.forEach(add);
    }
  }
  return summary;
}

async function expand(input: string, add: (i: ValidationIssue) => void): Promise<string[]> {
  if (input === "-") return ["-"];
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(input);
  } catch (e) {
    add({ file: input, field: "", message: `cannot read: ${describeFsError(e)}`, severity: "error" });
    return [];
  }
  if (!info.isDirectory) return [input];
  const found: string[] = [];
  const walk = async (dir: string) => {
    const entries: Deno.DirEntry[] = [];
    for await (const e of Deno.readDir(dir)) entries.push(e);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const path = `${dir.replace(/\/$/, "")}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (/\.(ya?ml|json)$/i.test(e.name)) found.push(path);
    }
  };
  await walk(input);
  if (found.length === 0) {
    add({
      file: input,
      field: "",
      message: "directory holds no .yaml, .yml or .json files",
      severity: "error",
    });
  }
  return found;
}

async function readText(
  file: string,
  options: ValidateInputsOptions,
  add: (i: ValidationIssue) => void,
): Promise<string | undefined> {
  const fail = (message: string) => {
    add({ file, field: "", message, severity: "error" });
    return undefined;
  };
  let bytes: Uint8Array;
  try {
    if (file === "-") {
      bytes = await (options.readStdin ?? readStdinLimited)();
    } else {
      // Checked before reading, so a huge file costs no memory.
      const size = (await Deno.stat(file)).size;
      if (size > MAX_CONFIG_BYTES) {
        return fail(
          `file is ${(size / 1048576).toFixed(1)} MiB; the limit is ${MAX_CONFIG_BYTES / 1048576} MiB`,
        );
      }
      bytes = await Deno.readFile(file);
    }
  } catch (e) {
    return fail(`cannot read: ${describeFsError(e)}`);
  }
  if (bytes.length > MAX_CONFIG_BYTES) {
    return fail(`input is over the limit of ${MAX_CONFIG_BYTES / 1048576} MiB`);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return fail("binary data: the file is not UTF-8 text");
  }
}

async function readStdinLimited(): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of Deno.stdin.readable) {
    chunks.push(chunk);
    total += chunk.length;
    if (total > MAX_CONFIG_BYTES) break;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function describeFsError(e: unknown): string {
  if (e instanceof Deno.errors.NotFound) return "no such file or directory";
  if (e instanceof Deno.errors.PermissionDenied) return "permission denied";
  return e instanceof Error ? e.message : String(e);
}

/** Builds the `validate` command. Output lines go to `write`; the exit code to `setExitCode`. */
export function validateCommand(
  write: (text: string) => void,
  setExitCode: (code: number) => void,
): CommandUnknownOpts {
  return new Command("validate")
    .alias("v")
    .description("Validate mesh policy and networking files (Istio's YAML is accepted as is)")
    .option(
      "-f, --filename <files>",
      "files or directories to validate (comma-separated, repeatable; - for standard input)",
      collectStrings,
      new Array<string>(),
    )
    .action(async (opts, cmd) => {
      const globals = globalOptions(cmd);
      if (opts.filename.length === 0) {
        throw new Error("validate needs -f <file|dir|->; see meshctl validate --help");
      }
      const summary = await validateInputs(opts.filename, {
        rootNamespace: globals.meshNamespace,
        defaultNamespace: globals.namespace || undefined,
      });
      for (const issue of summary.issues) write(formatIssue(issue) + "\n");
      write(
        `${
          summary.errors === 0 ? "valid" : "invalid"
        }: ${summary.resources} resources valid in ${summary.files} files` +
          `, ${summary.errors} errors, ${summary.warnings} warnings` +
          (summary.skipped > 0 ? `, ${summary.skipped} non-mesh documents skipped` : "") + "\n",
      );
      setExitCode(summary.errors === 0 ? 0 : 1);
    });
}
