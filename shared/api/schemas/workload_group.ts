/**
 * WorkloadGroup (networking.mesh.io/v1): a template for WorkloadEntries that VMs register
 * themselves with, and the readiness probe the proxy runs for them. Fields are Istio's
 * networking/v1 WorkloadGroup (istio.io/latest/docs/reference/config/networking/workload-group);
 * rules are Istio's ValidateWorkloadGroup and validateReadinessProbe, plus the CRD's validations.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type Finding, warning } from "../finding.ts";
import { closed, ResourceEnvelope } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import {
  asArray,
  asObject,
  asString,
  checkLabels,
  checkPortName,
  entriesOf,
  isSet,
  type Obj,
} from "./networking_rules.ts";
import { UNIX_ADDRESS_PREFIX, WorkloadEntrySpec } from "./workload_entry.ts";
import { checkProxyConfigAnnotation } from "./proxy_config_rules.ts";

const ProbePort = Type.Integer({
  minimum: 1,
  maximum: 65535,
  description: "Port the probe connects to, 1-65535",
});
const NonNegativeInt32 = (description: string) =>
  Type.Integer({ minimum: 0, maximum: 2147483647, description });

/** The health check methods of a ReadinessProbe, exactly one of which must be set. */
export const PROBE_METHODS = ["httpGet", "tcpSocket", "exec", "grpc"] as const;

/** Header names a probe may send (Istio's ValidateProbeHeaderName, aligned with Kubernetes). */
const PROBE_HEADER_NAME = /^[-A-Za-z0-9]+$/;

const WorkloadGroupObjectMeta = Type.Object({
  labels: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: "Labels of every generated entry" }),
  ),
  annotations: Type.Optional(Type.Record(Type.String(), Type.String(), {
    description: "Annotations of every generated entry",
  })),
}, {
  ...closed,
  title: "WorkloadGroupObjectMeta",
  description: "Metadata copied to every generated WorkloadEntry",
});

const HTTPHeader = Type.Object({
  name: Type.Optional(Type.String({ description: "Header name: letters, digits, -" })),
  value: Type.Optional(Type.String({ description: "Header value" })),
}, { ...closed, title: "HTTPHeader", description: "A header the probe sends" });

const HTTPHealthCheckConfig = Type.Object({
  path: Type.Optional(Type.String({ description: "Path to request" })),
  port: ProbePort,
  host: Type.Optional(Type.String({ description: "Host to connect to; default: the workload's IP" })),
  scheme: Type.Optional(Type.String({ description: "HTTP (default) or HTTPS" })),
  httpHeaders: Type.Optional(Type.Array(HTTPHeader, { description: "Headers to send" })),
}, { ...closed, title: "HTTPHealthCheckConfig", description: "Healthy when a GET returns 2xx or 3xx" });

const TCPHealthCheckConfig = Type.Object({
  host: Type.Optional(Type.String({ description: "Host to connect to; default: the workload's IP" })),
  port: ProbePort,
}, { ...closed, title: "TCPHealthCheckConfig", description: "Healthy when a TCP connection succeeds" });

const ExecHealthCheckConfig = Type.Object({
  command: Type.Array(Type.String({ minLength: 1 }), {
    description: "Command and arguments; exit 0 means healthy",
  }),
}, { ...closed, title: "ExecHealthCheckConfig", description: "Healthy when the command exits 0" });

const GrpcHealthCheckConfig = Type.Object({
  port: Type.Optional(ProbePort),
  service: Type.Optional(Type.String({ description: "Service name sent in the gRPC health check request" })),
}, {
  ...closed,
  title: "GrpcHealthCheckConfig",
  description: "Healthy when the gRPC health check says SERVING",
});

const ReadinessProbe = Type.Object({
  initialDelaySeconds: Type.Optional(NonNegativeInt32("Seconds after start before the first probe")),
  timeoutSeconds: Type.Optional(NonNegativeInt32("Seconds after which a probe times out; default 1")),
  periodSeconds: Type.Optional(NonNegativeInt32("Seconds between probes; default 10")),
  successThreshold: Type.Optional(NonNegativeInt32("Consecutive successes to become ready; default 1")),
  failureThreshold: Type.Optional(NonNegativeInt32("Consecutive failures to become unready; default 3")),
  httpGet: Type.Optional(HTTPHealthCheckConfig),
  tcpSocket: Type.Optional(TCPHealthCheckConfig),
  exec: Type.Optional(ExecHealthCheckConfig),
  grpc: Type.Optional(GrpcHealthCheckConfig),
}, {
  ...closed,
  title: "ReadinessProbe",
  description: "Health check the proxy runs; exactly one of httpGet, tcpSocket, exec, grpc",
});

const WorkloadGroupSpec = Type.Object({
  metadata: Type.Optional(WorkloadGroupObjectMeta),
  template: WorkloadEntrySpec,
  probe: Type.Optional(ReadinessProbe),
}, {
  ...closed,
  title: "WorkloadGroupSpec",
  description: "Template and health check of the WorkloadEntries that workloads of the group register",
});

function checkTemplate(template: Obj): Finding[] {
  const out: Finding[] = [];
  const at = ["spec", "template"];
  const address = asString(template.address);
  // Istio fills these in when a workload registers; values in the template are overwritten.
  if (address) {
    out.push(
      warning([...at, "address"], "address should not be set in a template: each workload registers its own"),
    );
  }
  if (entriesOf(template.labels).length > 0) {
    out.push(warning([...at, "labels"], "labels should be set in spec.metadata.labels, not in the template"));
  }
  out.push(...checkLabels(template.labels, [...at, "labels"]));
  for (const [name] of entriesOf(template.ports)) out.push(...checkPortName(name, [...at, "ports", name]));
  if (address?.startsWith(UNIX_ADDRESS_PREFIX) && entriesOf(template.ports).length > 0) {
    out.push(error([...at, "ports"], "a unix socket address may not have ports"));
  }
  return out;
}

/** Istio's validateReadinessProbe: exactly one method, each with valid settings. */
function checkProbe(probe: Obj): Finding[] {
  const at = ["spec", "probe"];
  const methods = PROBE_METHODS.filter((m) => isSet(probe[m]));
  if (methods.length === 0) return [error(at, `a probe needs one of ${PROBE_METHODS.join(", ")}`)];
  if (methods.length > 1) {
    return [error(at, `only one of ${PROBE_METHODS.join(", ")} may be set; got ${methods.join(" and ")}`)];
  }
  const out: Finding[] = [];
  const method = asObject(probe[methods[0]]);
  if (!method) return out;
  const mat = [...at, methods[0]];
  switch (methods[0]) {
    case "httpGet": {
      const scheme = asString(method.scheme);
      if (scheme !== undefined && scheme !== "" && scheme !== "HTTP" && scheme !== "HTTPS") {
        out.push(error([...mat, "scheme"], `scheme must be HTTP or HTTPS, got "${scheme}"`));
      }
      asArray(method.httpHeaders).forEach((h, i) => {
        const name = asObject(h)?.name;
        if (name === undefined || name === "") {
          out.push(error([...mat, "httpHeaders", i], "header name must not be empty"));
        } else if (typeof name === "string" && !PROBE_HEADER_NAME.test(name)) {
          out.push(
            error(
              [...mat, "httpHeaders", i, "name"],
              `"${name}" is not a valid header name (letters, digits, -)`,
            ),
          );
        }
      });
      break;
    }
    case "exec":
      if (Array.isArray(method.command) && method.command.length === 0) {
        out.push(error([...mat, "command"], "command must not be empty"));
      }
      break;
    case "grpc":
      if (!isSet(method.port)) out.push(error(mat, "port is required"));
      break;
  }
  return out;
}

/**
 * Istio's ValidateWorkloadGroup on a whole resource.
 *
 * @returns the findings; the resource may be any parsed value
 */
export function workloadGroupRules(resource: unknown): Finding[] {
  const spec = asObject(asObject(resource)?.spec);
  if (!spec) return [];
  const out = checkLabels(asObject(spec.metadata)?.labels, ["spec", "metadata", "labels"]);
  out.push(
    ...checkProxyConfigAnnotation(asObject(spec.metadata)?.annotations, ["spec", "metadata", "annotations"]),
  );
  const template = asObject(spec.template);
  if (template) out.push(...checkTemplate(template));
  const probe = asObject(spec.probe);
  if (probe) out.push(...checkProbe(probe));
  return out;
}

/** WorkloadGroup: schema and Istio's rules. */
export const workloadGroup = defineKind({
  kind: "WorkloadGroup",
  group: "networking",
  plural: "workloadgroups",
  schema: ResourceEnvelope(
    "WorkloadGroup",
    WorkloadGroupSpec,
    "A group of non-Kubernetes workloads, like a Deployment: WorkloadEntries are created from its template",
  ),
  rules(wg): Finding[] {
    return workloadGroupRules(wg);
  },
});
