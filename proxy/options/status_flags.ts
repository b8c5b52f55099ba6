/**
 * `--statusPort` (pilot-agent's flag) and the application probers of ISTIO_KUBE_APP_PROBERS that the
 * status listener performs (proxy/status/). The injector sets both (shared/internal/inject/probe_rewrite.ts).
 *
 * @module
 */
import { type AppProbers, KUBE_APP_PROBERS_ENV, parseAppProbers } from "../../shared/internal/app_probers.ts";
import type { ProxyFlag } from "./flag.ts";

/** The status flags, in `--help` order. */
export const STATUS_FLAGS: readonly ProxyFlag[] = [
  {
    name: "statusPort",
    value: "<port>",
    description: "the status listener on every interface (pilot-agent's 15020): GET " +
      "/app-health/<container>/livez|readyz|startupz performs that container's original probe from " +
      `${KUBE_APP_PROBERS_ENV} against 127.0.0.1 (HTTP(S) GET, TCP connect, gRPC health check), ` +
      "/healthz/ready is 200 when the proxy is LIVE; 0 turns it off (the default here; the injector " +
      "sets 15020 when it rewrote probes)",
    default: "0",
  },
];

/** The status settings. */
export interface StatusOptions {
  /** 0: no status listener. */
  statusPort: number;
  appProbers: AppProbers;
}

/**
 * Reads `--statusPort` and ISTIO_KUBE_APP_PROBERS.
 *
 * @param err records a bad flag value: flag name, value, reason
 * @param errors records any other error (the variable's)
 * @param warnings records a setting without effect
 */
export function validateStatusFlags(
  text: (name: string) => string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  report: {
    err(name: string, value: string, reason: string): void;
    errors: string[];
    warnings: string[];
  },
): StatusOptions {
  const portText = text("statusPort")!;
  let statusPort = 0;
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    report.err("statusPort", portText, "is not a port number 0..65535 (0: no status listener)");
  } else statusPort = Number(portText);
  let appProbers: AppProbers = {};
  const probersText = env[KUBE_APP_PROBERS_ENV];
  if (probersText !== undefined && probersText !== "") {
    try {
      appProbers = parseAppProbers(probersText, KUBE_APP_PROBERS_ENV);
    } catch (e) {
      report.errors.push((e as Error).message);
    }
    if (statusPort === 0) {
      report.warnings.push(`${KUBE_APP_PROBERS_ENV} has no effect without --statusPort`);
    }
  }
  return { statusPort, appProbers };
}
