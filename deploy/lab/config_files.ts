/**
 * `lab apply` and `lab delete`: put configuration files into meshd's config directory, or take
 * them out, as `kubectl apply -f` / `kubectl delete -f` would. A file is validated with `shared`
 * first (the same rules as `meshctl validate`); a file with an error is not applied, and nothing
 * is applied when any file has one. Files keep their base name in the config directory and are
 * written by rename, so meshd never reads half a file. In a lab whose config comes from its Kubernetes API
 * server (`lab up --config-source kube`, kube_config.ts), the same validation runs, then `kubectl apply -f`
 * (`kubectl delete -f`) of each file: that lab has no config directory.
 *
 * @module
 */
import { basename, join } from "node:path";
import { formatIssue, validateText } from "../../shared/mod.ts";
import { InputError } from "../../shared/internal/lab/input_error.ts";
import { GENERATED_CONFIG_FILE } from "./mesh_config.ts";
import { labPaths } from "../../shared/internal/lab/state.ts";
import { isKubeLab, kubectlFiles } from "./kube_config.ts";

async function configDirOf(name: string, dir?: string): Promise<string> {
  const configDir = labPaths(name, dir).configDir;
  try {
    await Deno.stat(configDir);
  } catch {
    throw new Error(`lab ${name} is not up (no ${configDir}); run: lab up <topology.yaml> --name ${name}`);
  }
  return configDir;
}

function targetName(file: string): string {
  const base = basename(file);
  if (base === GENERATED_CONFIG_FILE) {
    throw new InputError([`${file}: the name ${GENERATED_CONFIG_FILE} is the lab's own file; rename yours`]);
  }
  return base;
}

/**
 * Validates `files` and copies them into the lab's config directory (kube mode: `kubectl apply -f` each).
 *
 * @returns the paths written; in kube mode kubectl's lines (`<kind>.<group>/<name> created`)
 * @throws InputError with every error (nothing is applied then); Error when the lab is not up or kubectl fails
 */
export async function labApply(
  name: string,
  files: string[],
  options: { dir?: string } = {},
): Promise<string[]> {
  if (await isKubeLab(name, options.dir)) {
    await validatedTexts(files);
    return await kubectlFiles(name, "apply", files, options);
  }
  const configDir = await configDirOf(name, options.dir);
  const written: string[] = [];
  for (const { target, text } of await validatedTexts(files)) {
    const path = join(configDir, target);
    await Deno.writeTextFile(`${path}.tmp`, text);
    await Deno.rename(`${path}.tmp`, path);
    written.push(path);
  }
  return written;
}

/** Each file's text and base name; @throws InputError with every problem of every file */
async function validatedTexts(files: string[]): Promise<{ target: string; text: string }[]> {
  const problems: string[] = [];
  const texts: { target: string; text: string }[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (e) {
      problems.push(`${file}: cannot read: ${(e as Error).message}`);
      continue;
    }
    const result = validateText(text, file);
    problems.push(...result.issues.filter((i) => i.severity === "error").map(formatIssue));
    if (result.resources.length === 0 && result.issues.length === 0) {
      problems.push(`${file}: holds no mesh resource`);
    }
    texts.push({ target: targetName(file), text });
  }
  if (problems.length > 0) throw new InputError(problems);
  return texts;
}

/**
 * Removes the files of these base names from the lab's config directory (kube mode: `kubectl delete -f`
 * each file, so there they are paths to the files that were applied).
 *
 * @returns the paths removed; in kube mode kubectl's lines
 * @throws Error naming a file that was never applied (the others are still removed)
 */
export async function labDelete(
  name: string,
  files: string[],
  options: { dir?: string } = {},
): Promise<string[]> {
  if (await isKubeLab(name, options.dir)) return await kubectlFiles(name, "delete", files, options);
  const configDir = await configDirOf(name, options.dir);
  const removed: string[] = [];
  const missing: string[] = [];
  for (const file of files) {
    const path = join(configDir, targetName(file));
    try {
      await Deno.remove(path);
      removed.push(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      missing.push(`${file}: not applied in lab ${name} (no ${path})`);
    }
  }
  if (missing.length > 0) throw new InputError(missing);
  return removed;
}
