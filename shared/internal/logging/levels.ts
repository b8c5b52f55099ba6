/**
 * The proxy's log levels and logger names (Envoy's levels, and the proxy's named loggers, as the admin
 * `/logging` endpoint and `--log_output_level` take them): the proxy's logger (proxy/logging/logger.ts)
 * applies them and `meshctl proxy-config log` names them.
 *
 * @module
 */

/** Envoy's log levels, most verbose first. */
export const LOG_LEVELS = ["trace", "debug", "info", "warning", "error", "critical", "off"] as const;

/** One level. */
export type LogLevel = typeof LOG_LEVELS[number];

/** The proxy's named loggers. */
export const LOGGERS = [
  "admin",
  "agent",
  "gateway",
  "inbound",
  "jwt",
  "main",
  "outbound",
  "workers",
] as const;

/** One logger name. */
export type LoggerName = typeof LOGGERS[number];

/** The level of every logger. */
export type LogLevels = Record<LoggerName, LogLevel>;

/** Whether `text` is a level. */
export function isLogLevel(text: string): text is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(text);
}

/** Whether `text` is a logger name. */
export function isLoggerName(text: string): text is LoggerName {
  return (LOGGERS as readonly string[]).includes(text);
}
