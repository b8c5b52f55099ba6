/**
 * A real {@link Logger} for tests, with the default levels, writing each line to `sink`.
 *
 * @module
 */
import { Logger, parseLogOptions } from "./logger.ts";

/** A logger at the default levels whose every line (stdout and stderr) goes to `sink`. */
export function testLogger(sink: (line: string) => void = () => {}): Logger {
  const parsed = parseLogOptions({
    outputLevel: "",
    stacktraceLevel: "default:none",
    caller: "",
    asJson: false,
    targets: ["stdout"],
  });
  if (parsed.errors.length > 0) throw new Error(parsed.errors.join("; "));
  return new Logger(parsed.value, { stdout: sink, stderr: sink });
}
