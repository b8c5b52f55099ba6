/**
 * The file side of meshd's config store (meshd issue, "2. Config store"): which files under
 * `--configDir` are configuration, reading one safely, and watching the directory.
 *
 * The watcher never trusts event kinds: editors save by rename (vim renames the old file away and
 * writes a new one; others write a temporary file and rename it over), some delete then create, and
 * a directory created with files in it may report only the directory. So every event is reduced to
 * "this path may have changed", events are coalesced for a short delay, and each affected path is
 * looked at again: a file is re-read, a directory is walked, a missing path drops what was under it.
 *
 * @module
 */
import { join, relative, resolve, sep as SEPARATOR } from "node:path";
import { MAX_CONFIG_BYTES } from "../../shared/mod.ts";

/**
 * Whether a path relative to the config directory names a configuration file: `*.yaml`, `*.yml`
 * or `*.json`, with no dot-prefixed component (dotfiles, `.git/`, `.foo.swp`, Kubernetes'
 * `..data`) and not an editor backup (`foo.yaml~`). Vim's `4913` probe file has no extension.
 */
export function isConfigPath(relativePath: string): boolean {
  const parts = relativePath.split(/[\\/]/).filter((p) => p !== "");
  if (parts.length === 0 || parts.some((p) => p.startsWith("."))) return false;
  return /\.(ya?ml|json)$/i.test(parts[parts.length - 1]);
}

/** What reading one configuration file gave. */
export type ConfigFileRead =
  /** The file is gone (or is no longer a file). */
  | { status: "missing" }
  /** UTF-8 text, with a fingerprint of the bytes. */
  | { status: "text"; text: string; fingerprint: string }
  /** A file-level problem (too large, not UTF-8, unreadable), as a sentence, with a fingerprint. */
  | { status: "error"; message: string; fingerprint: string };

/** Options of {@link readConfigFile}. */
export interface ReadConfigFileOptions {
  /** The size limit in bytes; default MAX_CONFIG_BYTES, the limit validateText applies. */
  maxBytes?: number;
  /** Reads the whole file; default Deno.readFile. Injectable so tests can prove what is not read. */
  readFile?: (path: string) => Promise<Uint8Array>;
}

/**
 * Reads a configuration file. The size is checked before reading, so an oversized file costs no
 * memory; it is checked again after reading in case the file grew in between.
 *
 * @returns the text, a file-level problem, or `missing`; never throws
 */
export async function readConfigFile(
  path: string,
  options: ReadConfigFileOptions = {},
): Promise<ConfigFileRead> {
  const maxBytes = options.maxBytes ?? MAX_CONFIG_BYTES;
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { status: "missing" };
    return fileError(`cannot read: ${describeError(e)}`, undefined);
  }
  if (!info.isFile) return { status: "missing" };
  if (info.size > maxBytes) return fileError(tooLarge(info.size, maxBytes), info);
  let bytes: Uint8Array;
  try {
    bytes = await (options.readFile ?? Deno.readFile)(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { status: "missing" };
    return fileError(`cannot read: ${describeError(e)}`, info);
  }
  if (bytes.length > maxBytes) return fileError(tooLarge(bytes.length, maxBytes), info);
  const fingerprint = await sha256(bytes);
  try {
    return { status: "text", text: new TextDecoder("utf-8", { fatal: true }).decode(bytes), fingerprint };
  } catch {
    return { status: "error", message: "binary data: the file is not UTF-8 text", fingerprint };
  }
}

function tooLarge(size: number, maxBytes: number): string {
  // The wording of validateText's own size check, so meshctl and meshd report alike.
  return `file is ${(size / 1048576).toFixed(1)} MiB; the limit is ${maxBytes / 1048576} MiB`;
}

function fileError(message: string, info: Deno.FileInfo | undefined): ConfigFileRead {
  // Not a content hash: the file was not read. Size and mtime change when the file is rewritten.
  return { status: "error", message, fingerprint: `${message}|${info?.size}|${info?.mtime?.getTime()}` };
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Lists the configuration files under a directory, recursively, in a stable order (code-unit order
 * of names, depth first), which is the order "first loaded wins" refers to. Symbolic links to files
 * are followed; links to directories are not, so that a link cycle cannot loop.
 *
 * @returns paths relative to `dir`
 */
export async function listConfigFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (rel: string) => {
    const entries: Deno.DirEntry[] = [];
    for await (const e of Deno.readDir(join(dir, rel))) entries.push(e);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith(".")) continue;
      const path = rel === "" ? e.name : join(rel, e.name);
      if (e.isDirectory) await walk(path);
      else if (isConfigPath(path) && (e.isFile || await isFileTarget(join(dir, path)))) found.push(path);
    }
  };
  await walk("");
  return found;
}

async function isFileTarget(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false; // a dangling link, or one that vanished while listing
  }
}

/** Options of {@link DirectorySource}. */
export interface DirectorySourceOptions {
  /**
   * Receives every batch of files that may have changed, as `join(dir, relativePath)`, sorted.
   * Each may exist or not (then it was deleted or renamed away). Batches never overlap: the next
   * one waits until the returned promise settles.
   */
  onFiles: (files: string[]) => Promise<void>;
  /** How long to wait for a burst of events to end, in ms; default 50. */
  coalesceMs?: number;
  /** The longest a batch waits while events keep coming, in ms; default 10 × coalesceMs. */
  maxDelayMs?: number;
  /** Where failures of the watcher and of `onFiles` go; default console.error. */
  onError?: (message: string) => void;
}

/**
 * Scans a directory and then watches it with Deno.watchFs, reporting batches of possibly changed
 * configuration files.
 */
export class DirectorySource {
  readonly #dir: string;
  readonly #options: DirectorySourceOptions;
  /** Absolute forms of the directory that event paths may start with (as given, and real). */
  #roots: string[] = [];
  /** Configuration files last seen to exist, relative, so that a vanished directory's are known. */
  #known = new Set<string>();
  #pending = new Set<string>();
  #rescanAll = false;
  #watcher: Deno.FsWatcher | undefined;
  #pump: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #firstPendingAt = 0;
  /** The batch being delivered, and those queued behind it: one at a time. */
  #queue: Promise<void> = Promise.resolve();
  #running = false;

  /**
   * @param dir the configuration directory
   * @param options where batches go, and the coalescing delay
   */
  constructor(dir: string, options: DirectorySourceOptions) {
    this.#dir = dir;
    this.#options = options;
  }

  /**
   * Starts watching, then delivers every configuration file as the first batch and resolves when
   * that batch is processed. The watcher starts first, so that nothing changed during the scan is
   * missed (events during the scan are delivered afterwards).
   *
   * @throws if the directory does not exist or is not a directory
   */
  async start(): Promise<void> {
    if (this.#running) throw new Error("DirectorySource already started");
    const info = await Deno.stat(this.#dir);
    if (!info.isDirectory) throw new Error(`${this.#dir} is not a directory`);
    const absolute = resolve(this.#dir);
    const real = await Deno.realPath(this.#dir);
    this.#roots = absolute === real ? [real] : [real, absolute];
    this.#running = true;
    const watcher = Deno.watchFs(this.#dir, { recursive: true });
    this.#watcher = watcher;
    this.#pump = this.#consume(watcher);
    const initial = this.#enqueue(async () => {
      const files = await listConfigFiles(this.#dir);
      this.#known = new Set(files);
      await this.#options.onFiles(files.map((f) => join(this.#dir, f)));
    });
    try {
      await initial;
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  /** Stops watching; resolves once the watcher is closed and no batch is running. Idempotent. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    try {
      this.#watcher?.close();
    } catch {
      // already closed
    }
    this.#watcher = undefined;
    await this.#pump;
    await this.#queue.catch(() => {});
  }

  async #consume(watcher: Deno.FsWatcher): Promise<void> {
    try {
      for await (const event of watcher) {
        if (!this.#running) break;
        if (event.flag === "rescan") this.#rescanAll = true;
        for (const path of event.paths) this.#note(path);
        this.#schedule();
      }
    } catch (e) {
      if (this.#running) this.#error(`watching ${this.#dir} failed: ${describeError(e)}`);
    }
  }

  /** Records one event path, relative to the directory. */
  #note(path: string): void {
    const rel = this.#relative(path);
    if (rel === undefined) return;
    if (rel === "") {
      // The directory itself: it may have been replaced or removed; only a full rescan can tell.
      this.#rescanAll = true;
      return;
    }
    const first = rel.split(/[\\/]/)[0];
    // Kubernetes mounts a ConfigMap as symlinks through `..data`, swapped atomically on update:
    // the visible files change without an event of their own.
    if (first.startsWith("..")) this.#rescanAll = true;
    else if (!rel.split(/[\\/]/).some((p) => p.startsWith("."))) this.#pending.add(rel);
  }

  #relative(path: string): string | undefined {
    for (const root of this.#roots) {
      if (path === root) return "";
      if (path.startsWith(root + SEPARATOR)) return relative(root, path);
    }
    return undefined;
  }

  /** Trailing delay, so that a burst is one batch, capped so that a steady stream still flushes. */
  #schedule(): void {
    if (!this.#running) return;
    const delay = this.#options.coalesceMs ?? 50;
    const maxDelay = this.#options.maxDelayMs ?? 10 * delay;
    const now = Date.now();
    if (this.#timer === undefined) this.#firstPendingAt = now;
    else clearTimeout(this.#timer);
    const wait = Math.max(0, Math.min(delay, this.#firstPendingAt + maxDelay - now));
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#enqueue(() => this.#flush()).catch((e) =>
        this.#error(`processing changes in ${this.#dir} failed: ${describeError(e)}`)
      );
    }, wait);
  }

  #enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(job);
    this.#queue = next.catch(() => {});
    return next;
  }

  async #flush(): Promise<void> {
    if (!this.#running) return;
    const pending = [...this.#pending];
    const all = this.#rescanAll;
    this.#pending.clear();
    this.#rescanAll = false;
    const files = new Set<string>();
    if (all) {
      let found: string[] = [];
      try {
        found = await listConfigFiles(this.#dir);
      } catch (e) {
        this.#error(`rescanning ${this.#dir} failed: ${describeError(e)}`);
      }
      // Every known file is re-read too, so that the ones gone are dropped.
      for (const f of [...this.#known, ...found]) files.add(f);
      this.#known = new Set(found);
    } else {
      for (const rel of pending) await this.#expand(rel, files);
    }
    if (files.size === 0) return;
    const sorted = [...files].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    await this.#options.onFiles(sorted.map((f) => join(this.#dir, f)));
  }

  /** The configuration files that `rel` stands for: itself, or what is (or was) under it. */
  async #expand(rel: string, files: Set<string>): Promise<void> {
    const below = [...this.#known].filter((k) => k.startsWith(rel + SEPARATOR));
    let info: Deno.FileInfo | undefined;
    try {
      info = await Deno.stat(join(this.#dir, rel));
    } catch {
      info = undefined; // gone: deleted, or renamed away
    }
    if (info?.isDirectory) {
      let found: string[] = [];
      try {
        found = (await listConfigFiles(join(this.#dir, rel))).map((f) => join(rel, f));
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) this.#error(`reading ${rel} failed: ${describeError(e)}`);
      }
      for (const f of below) this.#known.delete(f);
      for (const f of found) this.#known.add(f);
      for (const f of [...below, ...found]) files.add(f);
      if (this.#known.delete(rel)) files.add(rel); // a file replaced by a directory
      return;
    }
    for (const f of below) {
      this.#known.delete(f);
      files.add(f);
    }
    if (!isConfigPath(rel)) return;
    if (info?.isFile) this.#known.add(rel);
    else this.#known.delete(rel);
    files.add(rel);
  }

  #error(message: string): void {
    (this.#options.onError ?? console.error)(message);
  }
}
