/**
 * meshd's logger, after Istio's `pkg/log` (meshd seed, "`meshd discovery` flags": `--log_as_json`,
 * `--log_caller`, `--log_output_level`, `--log_stacktrace_level`, `--log_target`).
 *
 * Lines look like Istio's:
 *
 * ```
 * 2026-11-21T00:00:00.000000Z	info	ads	new connection	node=sidecar~10.0.0.1 id=3
 * {"level":"info","time":"2026-11-21T00:00:00.000000Z","scope":"ads","msg":"new connection","node":"…"}
 * ```
 *
 * The default scope's lines carry no scope, as Istio's do. Levels, stack trace levels and caller
 * information can be changed per scope while the program runs (ctrlz's scope page does that).
 *
 * @module
 */
import {
  DEFAULT_SCOPE,
  LEVEL_RANK,
  type LevelName,
  type Parsed,
  parseScopedLevels,
  parseScopeList,
  RANK_LEVEL,
  type ScopedLevels,
  type ScopeName,
  SCOPES,
} from "./scopes.ts";

/** The logging configuration that the `--log_*` flags give. */
export interface LogOptions {
  /** Output level of every scope (`--log_output_level`; info where it names none). */
  outputLevels: Record<ScopeName, LevelName>;
  /** Level from which a stack trace is added (`--log_stacktrace_level`; default `default:none`). */
  stacktraceLevels: Record<ScopeName, LevelName>;
  /** Scopes whose lines include the calling file and line (`--log_caller`). */
  callers: ReadonlySet<ScopeName>;
  /** One JSON object per line instead of tab-separated text (`--log_as_json`). */
  asJson: boolean;
  /** Where lines go: `stdout`, `stderr` or file paths, each line to all (`--log_target`). */
  targets: readonly string[];
}

/** The raw `--log_*` flag values, as the command line gives them. */
export interface LogFlags {
  outputLevel: string;
  stacktraceLevel: string;
  caller: string;
  asJson: boolean;
  targets: readonly string[];
}

/** Istio's default output level of every scope. */
const DEFAULT_OUTPUT_LEVEL: LevelName = "info";

function allScopes(level: LevelName, overrides: ScopedLevels): Record<ScopeName, LevelName> {
  return Object.fromEntries(SCOPES.map((s) => [s, overrides[s] ?? level])) as Record<ScopeName, LevelName>;
}

/**
 * Turns the `--log_*` flags into {@link LogOptions}. Every bad item of every flag is reported, each
 * message naming the flag; an empty target list is an error because nothing would be written.
 */
export function parseLogOptions(flags: LogFlags): Parsed<LogOptions> {
  const output = parseScopedLevels("--log_output_level", flags.outputLevel);
  const stack = parseScopedLevels("--log_stacktrace_level", flags.stacktraceLevel);
  const callers = parseScopeList("--log_caller", flags.caller);
  const errors = [...output.errors, ...stack.errors, ...callers.errors];
  for (const target of flags.targets) {
    if (target === "") errors.push(`--log_target: "" is not a target; use stdout, stderr or a file path`);
  }
  if (flags.targets.length === 0) {
    errors.push("--log_target: no target given; use stdout, stderr or a file path");
  }
  return {
    value: {
      outputLevels: allScopes(DEFAULT_OUTPUT_LEVEL, output.value),
      stacktraceLevels: allScopes("none", stack.value),
      callers: callers.value,
      asJson: flags.asJson,
      targets: flags.targets,
    },
    errors,
  };
}

/** Key-value context of one message; values are printed as `key=value` or JSON members. */
export type Fields = Readonly<Record<string, unknown>>;

/**
 * Where `stdout` and `stderr` lines go and what the logger reads the time from. File targets are
 * opened directly (they need --allow-write).
 */
export interface LoggerIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Milliseconds since the epoch; Date.now by default. */
  now?(): number;
}

/** One scope's settings as ctrlz shows and changes them. */
export interface ScopeState {
  name: ScopeName;
  outputLevel: LevelName;
  stacktraceLevel: LevelName;
  caller: boolean;
}

type Emit = (scope: ScopeLogger, rank: number, msg: string, fields: Fields | undefined) => void;

/**
 * The logger of one scope. Each method first compares the message's rank with the scope's output
 * rank, so a disabled call costs that one comparison: no string, date or object is built.
 */
export class ScopeLogger {
  /** Output rank (see {@link LEVEL_RANK}); a message is written when its rank is at most this. */
  outputRank: number;
  /** Messages of rank at most this get a stack trace; 0 (`none`) gives none. */
  stacktraceRank: number;
  /** Whether lines carry the calling file and line. */
  caller: boolean;
  readonly #emit: Emit;

  /** Made by {@link Logger.scope}; not meant to be built directly. */
  constructor(readonly name: ScopeName, state: Omit<ScopeState, "name">, emit: Emit) {
    this.outputRank = LEVEL_RANK[state.outputLevel];
    this.stacktraceRank = LEVEL_RANK[state.stacktraceLevel];
    this.caller = state.caller;
    this.#emit = emit;
  }

  /** Logs at debug level. */
  debug(msg: string, fields?: Fields): void {
    if (this.outputRank < 5) return;
    this.#emit(this, 5, msg, fields);
  }

  /** Logs at info level. */
  info(msg: string, fields?: Fields): void {
    if (this.outputRank < 4) return;
    this.#emit(this, 4, msg, fields);
  }

  /** Logs at warn level. */
  warn(msg: string, fields?: Fields): void {
    if (this.outputRank < 3) return;
    this.#emit(this, 3, msg, fields);
  }

  /** Logs at error level. */
  error(msg: string, fields?: Fields): void {
    if (this.outputRank < 2) return;
    this.#emit(this, 2, msg, fields);
  }

  /**
   * Logs at fatal level. Unlike Go's loggers it does not end the process: the caller shuts down,
   * so that servers can drain first.
   */
  fatal(msg: string, fields?: Fields): void {
    if (this.outputRank < 1) return;
    this.#emit(this, 1, msg, fields);
  }

  /** Whether a message of this level would be written, to skip building costly fields. */
  enabled(level: LevelName): boolean {
    return LEVEL_RANK[level] !== 0 && LEVEL_RANK[level] <= this.outputRank;
  }
}

/** Istio's time format: UTC with microseconds (Date gives milliseconds, so the last three are 0). */
function timestamp(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, -1)}000Z`;
}

const PLAIN_VALUE = /^[^\s="\\]+$/;

function fieldText(value: unknown): string {
  if (typeof value === "string") return PLAIN_VALUE.test(value) ? value : JSON.stringify(value);
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === "object" && value !== null) return JSON.stringify(value);
  return String(value);
}

function jsonValue(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return value.message;
  return value;
}

/**
 * The caller of a ScopeLogger method. The stack is made in Logger#write: line 0 is `Error`, then
 * #write, the emit closure, the level method, and at line 4 the caller.
 */
function callerOf(stack: string | undefined): string {
  const frame = stack?.split("\n")[4] ?? "";
  const m = /([^/\\(\s]+\/[^/\\(\s]+):(\d+):\d+\)?$/.exec(frame) ??
    /([^/\\(\s]+):(\d+):\d+\)?$/.exec(frame);
  return m ? `${m[1]}:${m[2]}` : "unknown";
}

function stackOf(stack: string | undefined): string {
  return (stack ?? "").split("\n").slice(4).map((l) => l.trim()).join("\n");
}

/** One target: where lines go, and what closes it (files only). */
interface Sink {
  write(text: string): void;
  close?(): void;
}

function fileSink(path: string): Sink {
  const file = Deno.openSync(path, { append: true, create: true });
  const encoder = new TextEncoder();
  return {
    write(text) {
      const bytes = encoder.encode(text);
      // writeSync may write part of the buffer; lines must not be cut.
      for (let done = 0; done < bytes.length;) done += file.writeSync(bytes.subarray(done));
    },
    close: () => file.close(),
  };
}

/** The scopes of one program, each with its settings, writing to the configured targets. */
export class Logger {
  readonly #scopes = new Map<ScopeName, ScopeLogger>();
  #sinks: Sink[];
  readonly #asJson: boolean;
  readonly #now: () => number;

  /**
   * Opens every target; a file that cannot be opened throws an Error naming it.
   *
   * @param options the parsed `--log_*` flags
   * @param io where `stdout` and `stderr` go, and the clock
   */
  constructor(options: LogOptions, io: LoggerIo) {
    this.#asJson = options.asJson;
    this.#now = io.now ?? Date.now;
    this.#sinks = options.targets.map((target) => {
      if (target === "stdout") return { write: io.stdout };
      if (target === "stderr") return { write: io.stderr };
      try {
        return fileSink(target);
      } catch (e) {
        throw new Error(`--log_target: cannot open ${target}: ${(e as Error).message}`);
      }
    });
    const emit: Emit = (scope, rank, msg, fields) => this.#write(scope, rank, msg, fields);
    for (const name of SCOPES) {
      this.#scopes.set(
        name,
        new ScopeLogger(name, {
          outputLevel: options.outputLevels[name],
          stacktraceLevel: options.stacktraceLevels[name],
          caller: options.callers.has(name),
        }, emit),
      );
    }
  }

  /**
   * Closes the file targets (`--log_target` paths); stdout and stderr stay. Lines logged afterwards
   * still reach stdout and stderr targets but no file. Calling it again does nothing. meshd calls it
   * once shutdown is done.
   */
  close(): void {
    const files = this.#sinks.filter((s) => s.close !== undefined);
    this.#sinks = this.#sinks.filter((s) => s.close === undefined);
    for (const f of files) f.close!();
  }

  /** The logger of a scope; the same object on every call, so callers may keep it. */
  scope(name: ScopeName): ScopeLogger {
    return this.#scopes.get(name)!;
  }

  /** Every scope's current settings, in the seed's order. */
  scopes(): ScopeState[] {
    return [...this.#scopes.values()].map((s) => ({
      name: s.name,
      outputLevel: RANK_LEVEL[s.outputRank],
      stacktraceLevel: RANK_LEVEL[s.stacktraceRank],
      caller: s.caller,
    }));
  }

  /** Changes a scope's settings while the program runs; fields left out keep their value. */
  configure(name: ScopeName, change: Partial<Omit<ScopeState, "name">>): void {
    const s = this.scope(name);
    if (change.outputLevel !== undefined) s.outputRank = LEVEL_RANK[change.outputLevel];
    if (change.stacktraceLevel !== undefined) s.stacktraceRank = LEVEL_RANK[change.stacktraceLevel];
    if (change.caller !== undefined) s.caller = change.caller;
  }

  #write(scope: ScopeLogger, rank: number, msg: string, fields: Fields | undefined): void {
    const level = RANK_LEVEL[rank];
    const time = timestamp(this.#now());
    const needStack = scope.caller || rank <= scope.stacktraceRank;
    const stack = needStack ? new Error().stack : undefined;
    const caller = scope.caller ? callerOf(stack) : undefined;
    const trace = rank <= scope.stacktraceRank ? stackOf(stack) : undefined;
    const scopeName = scope.name === DEFAULT_SCOPE ? undefined : scope.name;
    let line: string;
    if (this.#asJson) {
      const record: Record<string, unknown> = { level, time };
      if (scopeName !== undefined) record.scope = scopeName;
      if (caller !== undefined) record.caller = caller;
      record.msg = msg;
      for (const key in fields) if (!(key in record)) record[key] = jsonValue(fields[key]);
      if (trace !== undefined) record.stack = trace;
      line = JSON.stringify(record);
    } else {
      line = `${time}\t${level}`;
      if (scopeName !== undefined) line += `\t${scopeName}`;
      if (caller !== undefined) line += `\t${caller}`;
      line += `\t${msg}`;
      if (fields !== undefined) {
        const pairs = Object.entries(fields).map(([k, v]) => `${k}=${fieldText(v)}`);
        if (pairs.length > 0) line += `\t${pairs.join(" ")}`;
      }
      if (trace !== undefined) line += `\n${trace}`;
    }
    line += "\n";
    for (const sink of this.#sinks) sink.write(line);
  }
}
