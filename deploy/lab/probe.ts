/**
 * A request from inside a workload, as a pod's `kubectl exec ... curl` would make it: curl in the
 * workload's namespace (so its hosts file and iptables capture apply), the HTTP status and curl's
 * exit code kept apart, because a STRICT reset shows as status `000` with exit code 56.
 *
 * @module
 */
import { execArgv } from "../../shared/internal/lab/exec.ts";
import { run } from "./host.ts";
import type { PlannedWorkload } from "../../shared/internal/lab/plan.ts";

/** What curl reported. */
export interface Probe {
  /** `%{http_code}`: `000` when no response came. */
  status: string;
  /** curl's exit code (0, or e.g. 56 for a connection reset). */
  exitCode: number;
  /** The response body. */
  body: string;
}

/**
 * GETs `url` from workload `w`.
 *
 * @param options `timeoutS` curl's --max-time (default 3)
 */
export async function probe(
  w: PlannedWorkload,
  url: string,
  options: { timeoutS?: number } = {},
): Promise<Probe> {
  const [cmd, ...args] = execArgv(w, [
    "curl",
    "-s",
    "--max-time",
    String(options.timeoutS ?? 3),
    "-w",
    "\n%{http_code}",
    url,
  ]);
  const r = await run(cmd, args);
  const nl = r.stdout.lastIndexOf("\n");
  return {
    status: r.stdout.slice(nl + 1) || "000",
    exitCode: r.code,
    body: r.stdout.slice(0, Math.max(nl, 0)),
  };
}

/** `200`, or `000 (exit 56)` when curl failed: the form Istio's task prints, plus the exit code. */
export function probeText(p: Pick<Probe, "status" | "exitCode">): string {
  return p.exitCode === 0 ? p.status : `${p.status} (exit ${p.exitCode})`;
}

/**
 * The X-Forwarded-Client-Cert header httpbin's `/headers` echoed, or undefined when absent.
 *
 * @throws Error when the body is not httpbin's JSON
 */
export function xfccOf(p: Probe): string | undefined {
  const headers = (JSON.parse(p.body) as { headers: Record<string, string | string[]> }).headers;
  const x = headers["X-Forwarded-Client-Cert"];
  return Array.isArray(x) ? x[0] : x;
}
