/**
 * The analyzers of `meshctl analyze`, named as Istio's (`auth.AuthorizationPoliciesAnalyzer`, ...).
 * Each reads the whole {@link AnalysisInput} and reports messages; selection semantics come from
 * shared/policy (policyAppliesTo, labelsMatch, boundPorts), the same code meshd and the proxy run.
 *
 * @module
 */
import {
  authorizationLayer,
  type BoundPort,
  boundPorts,
  effectivePeerAuthentication,
  httpOnlyFields,
  labelsMatch,
  type MeshResource,
  policyAppliesTo,
  type Rule,
  type SelectingService,
  serviceEntryPortProtocol,
  type SpecKind,
  tcpRuleEffect,
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

type Labels = Record<string, string>;

/** A resource of kind `K`: its `resource.spec` has that kind's type. */
type Analyzed<K extends SpecKind> = AnalyzedResource & { resource: Extract<MeshResource, { kind: K }> };

function on(r: AnalyzedResource, type: MessageType, ...params: unknown[]): AnalysisMessage {
  return {
    type,
    resource: { kind: r.kind, namespace: r.namespace, name: r.name },
    reference: r.reference,
    params,
  };
}

function matchLabelsOf(
  r: Analyzed<"AuthorizationPolicy" | "RequestAuthentication" | "PeerAuthentication">,
): Labels | undefined {
  const labels = r.resource.spec.selector?.matchLabels;
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
  entry?: Analyzed<"WorkloadEntry">;
  /** The service ports that target it, when known without a WorkloadEntry (a Pod). */
  bound?: BoundPort[];
}

function workloadsOf(input: AnalysisInput): Workload[] {
  const out: Workload[] = [];
  for (const r of input.resources) {
    if (isKind(r, "WorkloadEntry")) {
      out.push({ namespace: r.namespace, name: r.name, labels: r.resource.spec.labels ?? {}, entry: r });
    } else if (isKind(r, "WorkloadGroup")) {
      // Its future members carry the template's labels.
      out.push({ namespace: r.namespace, name: r.name, labels: r.resource.spec.metadata?.labels ?? {} });
    }
  }
  return [...out, ...input.workloads];
}

function isKind<K extends SpecKind>(r: AnalyzedResource, kind: K): r is Analyzed<K> {
  return r.resource.kind === kind;
}

function byKind<K extends SpecKind>(input: AnalysisInput, kind: K): Analyzed<K>[] {
  return input.resources.filter((r) => isKind(r, kind));
}

function asSelecting(r: Analyzed<"AuthorizationPolicy" | "RequestAuthentication">) {
  return { metadata: { namespace: r.namespace }, spec: { selector: { matchLabels: matchLabelsOf(r) } } };
}

/** IST0127 for AuthorizationPolicy and RequestAuthentication, after Istio's authz analyzer. */
function reportUnselected(
  input: AnalysisInput,
  kind: "AuthorizationPolicy" | "RequestAuthentication",
  report: (m: AnalysisMessage) => void,
): void {
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

/** The service ports that target a workload (none for a workload without a WorkloadEntry). */
function portsOf(w: Workload, services: SelectingService[]): BoundPort[] {
  if (w.bound) return w.bound.some((b) => b.service === "") ? namedPorts(w, w.bound, services) : w.bound;
  if (!w.entry) return [];
  return boundPorts(
    { metadata: { namespace: w.namespace }, spec: w.entry.resource.spec },
    services,
  );
}

/**
 * An auto-registered workload's bound ports as meshd's /debug/registryz gives them, container port
 * numbers only, named after the ServiceEntries that select its labels (service and port protocol),
 * so that a message says which service port makes it TCP. A port no selecting service explains
 * keeps its bare number.
 */
function namedPorts(w: Workload, bound: BoundPort[], services: SelectingService[]): BoundPort[] {
  const named = boundPorts({ metadata: { namespace: w.namespace }, spec: { labels: w.labels } }, services);
  return bound.flatMap((b) => {
    const found = named.filter((n) => n.containerPort === b.containerPort);
    return found.length > 0 ? found : [b];
  });
}

/**
 * The TCP ports of a workload: container ports that a service port targets whose protocol
 * (shared/protocol) is not HTTP, auto-detected ones included (a connection that is not HTTP is
 * authorized there as TCP).
 */
function tcpPorts(w: Workload, services: SelectingService[]): BoundPort[] {
  return portsOf(w, services).filter((b) =>
    authorizationLayer(serviceEntryPortProtocol(b.servicePort)) !== "http"
  );
}

function servicesOf(input: AnalysisInput): SelectingService[] {
  return byKind(input, "ServiceEntry").map((r) => ({
    metadata: { name: r.name, namespace: r.namespace },
    spec: r.resource.spec,
  }));
}

/** The ports a rule's operations limit it to; undefined when an operation names none (any port). */
function rulePorts(rule: Rule): number[] | undefined {
  const to = rule.to ?? [];
  if (to.length === 0 || to.some((t) => (t.operation?.ports ?? []).length === 0)) return undefined;
  return to.flatMap((t) => (t.operation?.ports ?? []).map(Number));
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
        for (const rule of r.resource.spec.rules ?? []) {
          for (const from of rule.from ?? []) {
            const names = [...(from.source?.namespaces ?? []), ...(from.source?.notNamespaces ?? [])];
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
        const spec = r.resource.spec;
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
              policies: policies.map((p) => p.resource),
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
        const mode = spec.mtls?.mode ?? "UNSET";
        const portLevel = spec.portLevelMtls ?? {};
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
          const withEntries = selected.filter((w) => w.entry || w.bound);
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
        const spec = r.resource.spec;
        const action = spec.action ?? "ALLOW";
        const targets = workloads.filter((w) =>
          policyAppliesTo(asSelecting(r), w, { rootNamespace: input.rootNamespace })
        );
        for (const [i, rule] of (spec.rules ?? []).entries()) {
          const fields = httpOnlyFields(rule);
          if (fields.length === 0) continue;
          const ports = rulePorts(rule);
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
                `${b.service} port ${b.servicePort.number} is ${serviceEntryPortProtocol(b.servicePort)}`,
                tcpRuleEffect(action) === "dropped"
                  ? "an ALLOW rule with HTTP-only fields is dropped on TCP: it never matches a connection, so it " +
                    "allows nothing there"
                  : `the HTTP-only fields are ignored on TCP, so this ${action} rule matches every connection its ` +
                    "other fields match",
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
        (r.resource.spec.jwtRules ?? []).some((j) => j.jwksUri)
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
        const labels = r.resource.spec.workloadSelector?.labels;
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
        for (const g of r.resource.spec.gateways ?? []) {
          if (g === "mesh") continue;
          const key = g.includes("/") ? g : `${r.namespace}/${g}`;
          if (!gateways.has(key)) report(on(r, MESSAGES.ReferencedResourceNotFound, "gateway", g));
        }
      }
    },
  },
];
