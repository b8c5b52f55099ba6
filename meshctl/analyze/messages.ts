/**
 * The analysis message types `meshctl analyze` reports: Istio's codes, levels and texts (Istio's
 * pkg/config/analysis/msg/messages.yaml) for the ones that apply to the mesh's kinds, and the mesh's
 * own codes (MESH0001 and up, outside Istio's IST range) for Istio's known traps.
 *
 * @module
 */

/** Severity, ordered like Istio's diag levels. */
export type Level = "Info" | "Warning" | "Error";

/** All levels, least severe first. */
export const LEVELS: readonly Level[] = ["Info", "Warning", "Error"];

/** Whether `level` is at least as severe as `threshold`. */
export function atLeast(level: Level, threshold: Level): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(threshold);
}

/**
 * Parses a level name as the seed's flags take it (`Info`, `Warning`, `Error`, any case).
 *
 * @throws Error naming the flag and the accepted values
 */
export function parseLevel(flag: string, value: string): Level {
  const found = LEVELS.find((l) => l.toLowerCase() === value.toLowerCase());
  if (!found) throw new Error(`${flag}: unknown level "${value}"; use ${LEVELS.join(", ")}`);
  return found;
}

/** One kind of message. */
export interface MessageType {
  /** E.g. `IST0101`. */
  code: string;
  /** E.g. `ReferencedResourceNotFound`. */
  name: string;
  level: Level;
  /** Printf-style template with `%s`, `%q` and `%d`, as Istio's. */
  template: string;
}

function type(code: string, name: string, level: Level, template: string): MessageType {
  return { code, name, level, template };
}

/** The message types, by name. */
export const MESSAGES = {
  ReferencedResourceNotFound: type(
    "IST0101",
    "ReferencedResourceNotFound",
    "Error",
    "Referenced %s not found: %q",
  ),
  NamespaceNotInjected: type(
    "IST0102",
    "NamespaceNotInjected",
    "Info",
    "The namespace is not enabled for mesh injection. Run 'kubectl label namespace %s mesh-injection=enabled' to " +
      "enable it, or 'kubectl label namespace %s mesh-injection=disabled' to explicitly mark it as not needing injection.",
  ),
  PodMissingProxy: type(
    "IST0103",
    "PodMissingProxy",
    "Warning",
    "The pod %s is missing the mesh proxy. This can often be resolved by restarting or redeploying the workload.",
  ),
  GatewayPortNotOnWorkload: type(
    "IST0104",
    "GatewayPortNotOnWorkload",
    "Warning",
    "The gateway refers to a port that is not exposed on the workload (pod selector %s; port %d)",
  ),
  MisplacedAnnotation: type(
    "IST0107",
    "MisplacedAnnotation",
    "Warning",
    "Misplaced annotation: %s can only be applied to %s",
  ),
  UnknownAnnotation: type("IST0108", "UnknownAnnotation", "Warning", "Unknown annotation: %s"),
  DeploymentAssociatedToMultipleServices: type(
    "IST0116",
    "DeploymentAssociatedToMultipleServices",
    "Warning",
    "This deployment %s is associated with multiple services using port %d but different protocols: %s",
  ),
  PortNameIsNotUnderNamingConvention: type(
    "IST0118",
    "PortNameIsNotUnderNamingConvention",
    "Info",
    "Port name %s (port: %d, targetPort: %s) doesn't follow the naming convention of Istio port.",
  ),
  SchemaValidationError: type("IST0106", "SchemaValidationError", "Error", "Schema validation error: %s"),
  SchemaWarning: type("IST0122", "SchemaWarning", "Warning", "Schema validation warning: %s"),
  NoMatchingWorkloadsFound: type(
    "IST0127",
    "NoMatchingWorkloadsFound",
    "Warning",
    "No matching workloads for this resource with the following labels: %s",
  ),
  IneffectiveSelector: type("IST0166", "IneffectiveSelector", "Warning", "Ineffective selector: %s"),
  IneffectivePolicy: type("IST0167", "IneffectivePolicy", "Warning", "The policy has no impact: %s."),
  JwksUriFetchUnrestricted: type(
    "IST0175",
    "JwksUriFetchUnrestricted",
    "Warning",
    "BLOCKED_CIDRS_IN_JWKS_URIS is not configured but %d RequestAuthentication resource(s) exist (%s). " +
      "Consider configuring it to restrict JWKS URI fetches to trusted networks.",
  ),
  PortLevelMtlsOnUnboundPort: type(
    "MESH0001",
    "PortLevelMtlsOnUnboundPort",
    "Warning",
    "portLevelMtls port %d has no effect: no service targets that port of %s, and port-level mTLS " +
      "applies only to ports bound to a service",
  ),
  HttpFieldsOnTcpPort: type(
    "MESH0002",
    "HttpFieldsOnTcpPort",
    "Warning",
    "rule %d uses HTTP-only fields (%s) but applies to TCP port %d of %s (%s): %s",
  ),
} as const satisfies Record<string, MessageType>;

/** Every message type, by code. */
export const MESSAGES_BY_CODE: ReadonlyMap<string, MessageType> = new Map(
  Object.values(MESSAGES).map((m) => [m.code, m]),
);

/** Fills a template: `%s` and `%d` as text, `%q` as a JSON string. */
export function render(template: string, params: readonly unknown[]): string {
  let i = 0;
  return template.replace(/%[sdqv]/g, (verb) => {
    const p = params[i++];
    return verb === "%q" ? JSON.stringify(String(p)) : String(p);
  });
}
