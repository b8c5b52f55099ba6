/**
 * The analyzers of `meshctl analyze`, named as Istio's (`auth.AuthorizationPoliciesAnalyzer`, ...).
 * Each reads the whole {@link AnalysisInput} and reports messages; selection semantics come from
 * shared/policy (policyAppliesTo, labelsMatch, boundPorts), the same code meshd and the proxy run.
 *
 * @module
 */
import {
  type BoundPort,
  boundPorts,
  effectivePeerAuthentication,
  labelsMatch,
  type PeerAuthenticationPolicy,
  policyAppliesTo,
  type PortedWorkload,
  type SelectingService,
} from "../../shared/mod.ts";
import type { AnalysisInput, AnalyzedResource } from "./input.ts";
import { MESSAGES, type MessageType } from "./messages.ts";

/** One message about one resource (or about the whole config when `resource` is absent). */
export interface AnalysisMessage {
  type: MessageType;
  resource?: { kind: string; namespace: string; name: string };
  /** `file:line` of the resource, or of the offending field when known. */
  reference?: string;
  params: unknown[];
}

/** An analyzer. */
export interface Analyzer {
  name: string;
  description: string;
  analyze(input: AnalysisInput, report: (m: AnalysisMessage) => void): void;
}

type Spec = Record<string, unknown>;
type Labels = Record<string, string>;

function on(r: AnalyzedResource, type: MessageType, ...params: unknown[]): AnalysisMessage {
  return {
    type,
    resource: { kind: r.kind, namespace: r.namespace, name: r.name },
    reference: r.reference,
    params,
  };
}

function specOf(r: AnalyzedResource): Spec {
  return (r.resource.spec ?? {}) as Spec;
}

function matchLabelsOf(r: AnalyzedResource): Labels | undefined {
  const labels = (specOf(r).selector as { matchLabels?: Labels } | undefined)?.matchLabels;
  return labels && Object.keys(labels).length > 0 ? labels : undefined;
}

function labelString(labels: Labels | undefined): string {
  return Object.entries(labels ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
}

/** A workload as the analyzers see it: a WorkloadEntry, a WorkloadGroup's template, or a live one. */
interface Workload {
  namespace: string;
  name: string;
  labels: Labels;
  /** The WorkloadEntry, for its ports. */
  entry?: AnalyzedResource;
}

function workloadsOf(input: AnalysisInput): Workload[] {
  const out: Workload[] = [];
  for (const r of input.resources) {
    if (r.kind === "WorkloadEntry") {
      out.push({
        namespace: r.namespace,
        name: r.name,
        labels: (specOf(r).labels ?? {}) as Labels,
        entry: r,
      });
    } else if (r.kind === "WorkloadGroup") {
      // Its future members carry the template's labels.
      const template = specOf(r).metadata as { labels?: Labels } | undefined;
      out.push({ namespace: r.namespace, name: r.name, labels: template?.labels ?? {} });
    }
  }
  return [...out, ...input.workloads];
}

function byKind(input: AnalysisInput, kind: string): AnalyzedResource[] {
  return input.resources.filter((r) => r.kind === kind);
}

function asSelecting(r: AnalyzedResource) {
  return { metadata: { namespace: r.namespace }, spec: { selector: { matchLabels: matchLabelsOf(r) } } };
}

/** IST0127 for AuthorizationPolicy and RequestAuthentication, after Istio's authz analyzer. */
function reportUnselected(input: AnalysisInput, kind: string, report: (m: AnalysisMessage) => void): void {
  const workloads = workloadsOf(input);
  const rootNamespace = input.rootNamespace;
  for (const r of byKind(input, kind)) {
    const selector = matchLabelsOf(r);
    if (r.namespace === rootNamespace && !selector) continue;
    if (!workloads.some((w) => policyAppliesTo(asSelecting(r), w, { rootNamespace }))) {
      report(on(r, MESSAGES.NoMatchingWorkloadsFound, labelString(selector)));
    }
  }
}

function namespaceMatch(namespace: string, pattern: string): boolean {
  if (pattern === "*") return true;
  if (pattern.startsWith("*")) return namespace.endsWith(pattern.slice(1));
  if (pattern.endsWith("*")) return namespace.startsWith(pattern.slice(0, -1));
  return namespace === pattern;
}

const HTTP_PROTOCOLS = new Set(["HTTP", "HTTP2", "GRPC", "GRPC-WEB"]);

/** The service ports that target a workload (none for a workload without a WorkloadEntry). */
function portsOf(w: Workload, services: SelectingService[]): BoundPort[] {
  if (!w.entry) return [];
  return boundPorts(
    { metadata: { namespace: w.namespace }, spec: specOf(w.entry) as PortedWorkload["spec"] },
    services,
  );
}

/** The TCP ports of a workload: container ports that a service port with a non-HTTP protocol targets. */
function tcpPorts(w: Workload, services: SelectingService[]): BoundPort[] {
  return portsOf(w, services).filter((b) =>
    b.servicePort.protocol !== undefined && !HTTP_PROTOCOLS.has(b.servicePort.protocol.toUpperCase())
  );
}

function servicesOf(input: AnalysisInput): SelectingService[] {
  return byKind(input, "ServiceEntry").map((r) => ({
    metadata: { name: r.name, namespace: r.namespace },
    spec: specOf(r) as SelectingService["spec"],
  }));
}

const HTTP_SOURCE_FIELDS = ["requestPrincipals", "notRequestPrincipals"];
const HTTP_OPERATION_FIELDS = ["hosts", "notHosts", "methods", "notMethods", "paths", "notPaths"];

/** The HTTP-only fields a rule uses, as field paths, and the ports its `to` limits it to. */
function httpOnlyFields(rule: Spec): { fields: string[]; ports?: number[] } {
  const fields: string[] = [];
  let ports: number[] | undefined;
  for (const [i, from] of ((rule.from ?? []) as { source?: Spec }[]).entries()) {
    for (const f of HTTP_SOURCE_FIELDS) {
      if (from.source?.[f] !== undefined) fields.push(`from[${i}].source.${f}`);
    }
  }
  for (const [i, to] of ((rule.to ?? []) as { operation?: Spec }[]).entries()) {
    for (const f of HTTP_OPERATION_FIELDS) {
      if (to.operation?.[f] !== undefined) fields.push(`to[${i}].operation.${f}`);
    }
    const p = to.operation?.ports as string[] | undefined;
    if (p) ports = [...(ports ?? []), ...p.map(Number)];
  }
  for (const [i, when] of ((rule.when ?? []) as { key?: string }[]).entries()) {
    if (when.key?.startsWith("request.")) fields.push(`when[${i}].key ${when.key}`);
  }
  return { fields, ports };
}

/** The analyzers, in the order they run. */
export const ANALYZERS: readonly Analyzer[] = [
  {
    name: "schema.ValidationAnalyzer",
    description: "Reports schema and rule violations of each resource (meshctl validate's checks)",
    analyze(input, report) {
      for (const issue of input.issues) {
        const [kind, nsName] = (issue.resource ?? "").split(" ");
        const [namespace, name] = (nsName ?? "").split("/");
        const where = issue.field ? `${issue.field}: ${issue.message}` : issue.message;
        report({
          type: issue.severity === "error" ? MESSAGES.SchemaValidationError : MESSAGES.SchemaWarning,
          resource: issue.resource ? { kind, namespace, name } : undefined,
          reference: issue.line ? `${issue.file}:${issue.line}` : issue.file,
          params: [where],
        });
      }
    },
  },
  {
    name: "auth.AuthorizationPoliciesAnalyzer",
    description: "Checks that authorization policies select workloads and reference existing namespaces",
    analyze(input, report) {
      reportUnselected(input, "AuthorizationPolicy", report);
      for (const r of byKind(input, "AuthorizationPolicy")) {
        const rules = (specOf(r).rules ?? []) as { from?: { source?: Spec }[] }[];
        for (const rule of rules) {
          for (const from of rule.from ?? []) {
            const names = [
              ...(from.source?.namespaces ?? []) as string[],
              ...(from.source?.notNamespaces ?? []) as string[],
            ];
            for (const ns of names) {
              if (![...input.namespaces].some((n) => namespaceMatch(n, ns))) {
                report(on(r, MESSAGES.ReferencedResourceNotFound, "namespace", ns));
              }
            }
          }
        }
      }
    },
  },
  {
    name: "authn.RequestAuthenticationAnalyzer",
    description: "Checks that request authentications select workloads",
    analyze(input, report) {
      reportUnselected(input, "RequestAuthentication", report);
    },
  },
  {
    name: "authn.PeerAuthenticationAnalyzer",
    description:
      "Checks peer authentications: selectors that match no workload or are ignored, policies shadowed by an " +
      "older one of the same scope, and portLevelMtls on ports no service targets",
    analyze(input, report) {
      const workloads = workloadsOf(input);
      const services = servicesOf(input);
      const policies = byKind(input, "PeerAuthentication");
      for (const r of policies) {
        const selector = matchLabelsOf(r);
        const spec = specOf(r);
        if (selector && r.namespace === input.rootNamespace) {
          report(on(
            r,
            MESSAGES.IneffectiveSelector,
            `a PeerAuthentication with a selector in the root namespace ${input.rootNamespace} is ignored; ` +
              `move it to the workloads' namespace`,
          ));
          continue;
        }
        const selected = workloads.filter((w) =>
          w.namespace === r.namespace && labelsMatch(selector, w.labels)
        );
        if (selector && selected.length === 0) {
          report(on(r, MESSAGES.NoMatchingWorkloadsFound, labelString(selector)));
        }
        if (!selector) {
          // The policy shared/policy picks for this scope (the oldest), asked for a workload of the namespace.
          let chosen: ReturnType<typeof effectivePeerAuthentication>["selected"] = {};
          try {
            chosen = effectivePeerAuthentication({
              namespace: r.namespace,
              port: 1,
              portBoundToService: false,
              policies: policies.map((p) => p.resource as PeerAuthenticationPolicy),
              rootNamespace: input.rootNamespace,
            }).selected;
          } catch {
            // A creationTimestamp that is not RFC 3339: no order to judge precedence by.
          }
          const isRoot = r.namespace === input.rootNamespace;
          const winner = isRoot ? chosen.mesh : chosen.namespace;
          if (winner && winner.name !== r.name) {
            const scope = isRoot ? "mesh-wide" : `namespace-wide (${r.namespace})`;
            report(on(
              r,
              MESSAGES.IneffectivePolicy,
              `the ${scope} PeerAuthentication ${winner.namespace}/${winner.name} is older and takes precedence; ` +
                `only one ${scope} policy is used`,
            ));
          }
        }
        const mode = (spec.mtls as { mode?: string } | undefined)?.mode ?? "UNSET";
        const portLevel = (spec.portLevelMtls ?? {}) as Record<string, unknown>;
        if (mode === "UNSET" && Object.keys(portLevel).length === 0) {
          report(
            on(
              r,
              MESSAGES.IneffectivePolicy,
              "mtls.mode is UNSET and there is no portLevelMtls: it only inherits",
            ),
          );
        }
        for (const port of Object.keys(portLevel).map(Number)) {
          const bound = selected.filter((w) => portsOf(w, services).some((b) => b.containerPort === port));
          const withEntries = selected.filter((w) => w.entry);
          if (withEntries.length > 0 && bound.length === 0) {
            report(on(
              r,
              MESSAGES.PortLevelMtlsOnUnboundPort,
              port,
              withEntries.map((w) => `${w.namespace}/${w.name}`).join(", "),
            ));
          }
        }
      }
    },
  },
  {
    name: "auth.TcpHttpFieldsAnalyzer",
    description: "Finds authorization rules with HTTP-only fields that apply to TCP ports (an Istio trap)",
    analyze(input, report) {
      const workloads = workloadsOf(input);
      const services = servicesOf(input);
      for (const r of byKind(input, "AuthorizationPolicy")) {
        const spec = specOf(r);
        const action = (spec.action as string | undefined) ?? "ALLOW";
        const targets = workloads.filter((w) =>
          policyAppliesTo(asSelecting(r), w, { rootNamespace: input.rootNamespace })
        );
        for (const [i, rule] of ((spec.rules ?? []) as Spec[]).entries()) {
          const { fields, ports } = httpOnlyFields(rule);
          if (fields.length === 0) continue;
          for (const w of targets) {
            for (const b of tcpPorts(w, services)) {
              if (ports && !ports.includes(b.containerPort)) continue;
              report(on(
                r,
                MESSAGES.HttpFieldsOnTcpPort,
                i,
                fields.join(", "),
                b.containerPort,
                `${w.namespace}/${w.name}`,
                `${b.service} port ${b.servicePort.number} is ${b.servicePort.protocol}`,
                action === "DENY"
                  ? "the HTTP-only conditions are dropped for TCP, so this DENY rule rejects every connection it " +
                    "otherwise matches"
                  : "the rule never matches a TCP connection, so it allows nothing there",
              ));
            }
          }
        }
      }
    },
  },
  {
    name: "authn.BlockedCIDRsAnalyzer",
    description: "Warns that RequestAuthentication jwksUri fetches are not restricted to trusted networks",
    analyze(input, report) {
      const fetching = byKind(input, "RequestAuthentication").filter((r) =>
        ((specOf(r).jwtRules ?? []) as { jwksUri?: string }[]).some((j) => j.jwksUri)
      );
      if (fetching.length === 0) return;
      report({
        type: MESSAGES.JwksUriFetchUnrestricted,
        params: [fetching.length, fetching.map((r) => `${r.namespace}/${r.name}`).join(", ")],
      });
    },
  },
  {
    name: "serviceentry.WorkloadSelectorAnalyzer",
    description: "Checks that a ServiceEntry's workloadSelector matches workloads",
    analyze(input, report) {
      const workloads = workloadsOf(input);
      for (const r of byKind(input, "ServiceEntry")) {
        const labels = (specOf(r).workloadSelector as { labels?: Labels } | undefined)?.labels;
        if (labels === undefined) continue;
        if (!workloads.some((w) => w.namespace === r.namespace && labelsMatch(labels, w.labels))) {
          report(on(r, MESSAGES.NoMatchingWorkloadsFound, labelString(labels)));
        }
      }
    },
  },
  {
    name: "virtualservice.GatewayAnalyzer",
    description: "Checks that the gateways a VirtualService binds to exist",
    analyze(input, report) {
      const gateways = new Set(byKind(input, "Gateway").map((g) => `${g.namespace}/${g.name}`));
      for (const r of byKind(input, "VirtualService")) {
        for (const g of (specOf(r).gateways ?? []) as string[]) {
          if (g === "mesh") continue;
          const key = g.includes("/") ? g : `${r.namespace}/${g}`;
          if (!gateways.has(key)) report(on(r, MESSAGES.ReferencedResourceNotFound, "gateway", g));
        }
      }
    },
  },
];
