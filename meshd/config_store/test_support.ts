/**
 * Helpers for the config store's tests: a store on a temporary directory with everything it
 * reports captured, and a bounded wait.
 *
 * @module
 */
import { dirname, join } from "node:path";
import type { ValidationIssue } from "../../shared/mod.ts";
import { type ConfigChange, ConfigStore, type ConfigStoreOptions } from "./mod.ts";

/** A PeerAuthentication; its `mode` is on line 8, which the invalid-edit tests rely on. */
export function peerAuthentication(namespace: string, name: string, mode = "STRICT"): string {
  return [
    "apiVersion: security.mesh.io/v1",
    "kind: PeerAuthentication",
    "metadata:",
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    "spec:",
    "  mtls:",
    `    mode: ${mode}`,
    "",
  ].join("\n");
}

/**
 * Polls `condition` every 10 ms until it holds.
 *
 * @throws after `timeoutMs` (default 5 s), naming what was awaited
 */
export async function waitFor(
  condition: () => boolean,
  what: string,
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(10);
  }
}

/** Resolves after `ms`; only for proving that nothing happens. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A store under test and what it reported. */
export interface Harness {
  dir: string;
  store: ConfigStore;
  rejected: ValidationIssue[];
  /** Log lines as `level: message`. */
  logs: string[];
  changes: ConfigChange[];
  /** The absolute name of a file under the directory, as the store names it. */
  path(rel: string): string;
  /** Writes a file (creating its directories). */
  write(rel: string, text: string): Promise<void>;
  /** Keys in force now. */
  keys(): string[];
  /** The `mtls.mode` of a PeerAuthentication in force. */
  mode(key: string): string | undefined;
}

/**
 * Writes `files` into a new temporary directory, starts a store on it, runs `body`, then stops the
 * store and removes the directory.
 */
export async function withStore(
  files: Record<string, string>,
  body: (h: Harness) => Promise<void> | void,
  options: Omit<ConfigStoreOptions, "onRejected" | "logger"> = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "config_store_test_" });
  const rejected: ValidationIssue[] = [];
  const logs: string[] = [];
  const changes: ConfigChange[] = [];
  const write = async (rel: string, text: string) => {
    await Deno.mkdir(dirname(join(dir, rel)), { recursive: true });
    await Deno.writeTextFile(join(dir, rel), text);
  };
  for (const [rel, text] of Object.entries(files)) await write(rel, text);
  const store = new ConfigStore(dir, {
    ...options,
    onRejected: (issue) => rejected.push(issue),
    logger: {
      error: (m) => logs.push(`error: ${m}`),
      warn: (m) => logs.push(`warning: ${m}`),
      info: (m) => logs.push(`info: ${m}`),
    },
  });
  store.onChange((c) => changes.push(c));
  try {
    await store.start();
    await body({
      dir,
      store,
      rejected,
      logs,
      changes,
      path: (rel) => join(dir, rel),
      write,
      keys: () => store.snapshot().resources.map((e) => e.key),
      mode: (key) => {
        const entry = store.snapshot().byKey[key];
        return entry?.kind === "PeerAuthentication" ? entry.resource.spec.mtls?.mode : undefined;
      },
    });
  } finally {
    await store.stop();
    await Deno.remove(dir, { recursive: true });
  }
}
