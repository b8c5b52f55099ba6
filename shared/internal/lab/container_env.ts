/**
 * What a workload's command sees, as a pod's container would: environment variables naming the
 * pod (POD_IP, POD_NAME, POD_NAMESPACE, SERVICE_ACCOUNT) plus BIND_IP, the address the application
 * should listen on, and `$(VAR)` expansion in the command as Kubernetes does for container
 * commands.
 *
 * @module
 */
import type { PlannedWorkload } from "./plan.ts";

/**
 * The variables of a workload. BIND_IP is 127.0.0.1 with a sidecar (the sidecar holds
 * `<POD_IP>:<port>` and forwards to `127.0.0.1:<port>`), else 0.0.0.0.
 */
export function containerEnv(w: PlannedWorkload): Record<string, string> {
  return {
    POD_IP: w.address,
    POD_NAME: w.name,
    POD_NAMESPACE: w.namespace,
    SERVICE_ACCOUNT: w.serviceAccount,
    BIND_IP: w.sidecar ? "127.0.0.1" : "0.0.0.0",
  };
}

/**
 * Expands `$(NAME)` in each argument from `env`, as Kubernetes does: `$$(NAME)` stays `$(NAME)`,
 * and a reference to an unknown variable is left as written.
 */
export function expandCommand(argv: readonly string[], env: Record<string, string>): string[] {
  return argv.map((arg) =>
    arg.replace(/\$(\$?)\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, escaped: string, name: string) => {
      if (escaped) return whole.slice(1);
      return Object.hasOwn(env, name) ? env[name] : whole;
    })
  );
}
