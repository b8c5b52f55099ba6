/**
 * The proxy's logger: Envoy's levels (trace, debug, info, warning, error, critical, off) per named
 * logger ("component"), changeable at run time through the admin `/logging` endpoint. Lines go to
 * stderr as `<RFC 3339 time>\t<level>\t<logger>\t<message>\t<key=value ...>`; with `worker` set, the
 * logger name is `<logger>/worker_<n>`.
 *
 * The same {@link LogLevels} value is posted to every worker so that a change reaches them all.
 *
 * @module
 */
import type { Log } from "../http/session_types.ts";
import {
  LOG_LEVELS,
  type LoggerName,
  LOGGERS,
  type LogLevel,
  type LogLevels,
} from "../../shared/internal/logging/levels.ts";

/** Every logger at `level`. */
export function uniformLevels(level: LogLevel): LogLevels {
  return Object.fromEntries(LOGGERS.map((l) => [l, level])) as LogLevels;
}

function rank(level: LogLevel): number {
  return LOG_LEVELS.indexOf(level);
}

function formatField(key: string, value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return `${key}=${/^[^\s"=]*$/.test(text ?? "") ? text : JSON.stringify(text)}`;
}

/** A logger of one name, as the data path and the agent take it. */
export interface ScopedLog extends Log {
  trace(msg: string, fields?: Record<string, unknown>): void;
}

/** Holds the levels and writes lines. */
export class ProxyLogger {
  #levels: LogLevels;
  readonly #write: (line: string) => void;
  readonly #suffix: string;

  /**
   * @param levels the initial levels
   * @param write where a line goes (default: stderr)
   * @param worker the worker number, for lines written in a worker
   */
  constructor(levels: LogLevels, write?: (line: string) => void, worker?: number) {
    this.#levels = { ...levels };
    this.#write = write ?? ((line) => console.error(line));
    this.#suffix = worker === undefined ? "" : `/worker_${worker}`;
  }

  /** The current levels (a copy). */
  levels(): LogLevels {
    return { ...this.#levels };
  }

  /** Replaces the levels of the named loggers. */
  setLevels(levels: Partial<LogLevels>): void {
    this.#levels = { ...this.#levels, ...levels };
  }

  /** Whether `logger` would write a line at `level`. */
  enabled(logger: LoggerName, level: LogLevel): boolean {
    return level !== "off" && rank(level) >= rank(this.#levels[logger]);
  }

  /** The logger of one name. */
  scope(logger: LoggerName): ScopedLog {
    const at = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) =>
      this.log(logger, level, msg, fields);
    return {
      trace: at("trace"),
      debug: at("debug"),
      info: at("info"),
      warn: at("warning"),
      error: at("error"),
    };
  }

  /** Writes one line when the logger's level allows it. */
  log(logger: LoggerName, level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
    if (!this.enabled(logger, level)) return;
    const extra = fields
      ? Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => formatField(k, v))
      : [];
    this.#write([new Date().toISOString(), level, logger + this.#suffix, msg, ...extra].join("\t"));
  }
}
