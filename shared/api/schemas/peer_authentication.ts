/**
 * PeerAuthentication (security.mesh.io/v1): whether a workload's inbound ports accept plain text,
 * mutual TLS, or both. Fields are Istio's security/v1beta1 PeerAuthentication; sources: the
 * policies seed ("PeerAuthentication.spec", "Scope and precedence rules") and Istio's
 * ValidatePeerAuthentication.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type Finding, warning } from "../finding.ts";
import { closed, ResourceEnvelope, StringEnum, WorkloadSelector } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import { checkWorkloadSelector, hasSelectorLabels } from "./selector_rules.ts";

/** The mutual TLS modes. UNSET inherits from the parent scope; no policy at all means PERMISSIVE. */
export const MTLS_MODES = ["UNSET", "DISABLE", "PERMISSIVE", "STRICT"] as const;

const MutualTls = Type.Object({
  mode: Type.Optional(
    StringEnum(MTLS_MODES, "UNSET inherits; DISABLE plain text; PERMISSIVE both; STRICT mutual TLS only"),
  ),
}, { ...closed, title: "MutualTls", description: "Mutual TLS setting of a workload or port" });

const PeerAuthenticationSpec = Type.Object({
  selector: Type.Optional(WorkloadSelector),
  mtls: Type.Optional(MutualTls),
  portLevelMtls: Type.Optional(Type.Record(Type.String(), MutualTls, {
    description:
      "Per container port (1-65535) override of mtls.mode; needs a selector, and applies only to ports bound to a service",
  })),
}, {
  ...closed,
  title: "PeerAuthenticationSpec",
  description: "Mutual TLS mode of the selected workloads' inbound traffic, with per-port overrides",
});

/** PeerAuthentication: schema and Istio's rules. */
export const peerAuthentication = defineKind({
  kind: "PeerAuthentication",
  group: "security",
  plural: "peerauthentications",
  schema: ResourceEnvelope(
    "PeerAuthentication",
    PeerAuthenticationSpec,
    "Whether workloads accept plain text, mutual TLS or both on their inbound ports",
  ),
  rules(pa, ctx): Finding[] {
    const spec = pa.spec ?? {};
    const out = checkWorkloadSelector(spec.selector, ["spec", "selector"]);
    const withLabels = hasSelectorLabels(spec.selector);
    const plm = spec.portLevelMtls;
    if (plm !== undefined && plm !== null && typeof plm === "object" && !Array.isArray(plm)) {
      if (!withLabels && Object.keys(plm).length > 0) {
        out.push(error(
          ["spec", "portLevelMtls"],
          "mesh-wide and namespace-wide PeerAuthentication cannot have portLevelMtls; add selector.matchLabels",
        ));
      }
      if (Object.keys(plm).length === 0) {
        out.push(error(["spec", "portLevelMtls"], "portLevelMtls, if present, must name at least one port"));
      }
      for (const port of Object.keys(plm)) {
        const n = /^[0-9]+$/.test(port) ? Number(port) : NaN;
        if (!(n >= 1 && n <= 65535)) {
          out.push(
            error(["spec", "portLevelMtls", port], `port must be a number in 1..65535, got "${port}"`),
          );
        }
      }
    }
    if (withLabels && (pa.metadata?.namespace ?? "") === ctx.rootNamespace) {
      out.push(warning(
        ["spec", "selector"],
        `a PeerAuthentication with a selector in the root namespace "${ctx.rootNamespace}" is ignored; ` +
          "move it to the workload's namespace, or drop the selector to make it mesh-wide",
      ));
    }
    return out;
  },
});
