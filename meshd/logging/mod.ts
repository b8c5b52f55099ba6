/**
 * meshd's logging: the seed's scopes and levels, the `--log_*` flag parsers and an Istio-style logger
 * (meshd seed, "`meshd discovery` flags").
 *
 * @example
 * ```ts
 * import { Logger, parseLogOptions } from "./mod.ts";
 * const parsed = parseLogOptions({
 *   outputLevel: "ads:debug",
 *   stacktraceLevel: "default:none",
 *   caller: "",
 *   asJson: false,
 *   targets: ["stderr"],
 * });
 * const logger = new Logger(parsed.value, { stdout: console.log, stderr: console.error });
 * logger.scope("ads").debug("push", { version: 3 });
 * ```
 *
 * @module
 */
export {
  ALL_SCOPES,
  DEFAULT_SCOPE,
  LEVEL_RANK,
  type LevelName,
  LEVELS,
  type Parsed,
  parseScopedLevels,
  parseScopeList,
  RANK_LEVEL,
  SCOPE_NAMES,
  type ScopedLevels,
  type ScopeName,
  SCOPES,
} from "./scopes.ts";
export {
  type Fields,
  type LogFlags,
  Logger,
  type LoggerIo,
  type LogOptions,
  parseLogOptions,
  ScopeLogger,
  type ScopeState,
} from "./logger.ts";
