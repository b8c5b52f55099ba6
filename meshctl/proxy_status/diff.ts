/**
 * The sync diff of one proxy: what meshd would send it now (`/debug/config_dump?proxyID=`) against
 * what the proxy holds (its `/config_dump`), per xDS type, as `istioctl proxy-status <pod>` compares
 * istiod's and Envoy's config. Compared: the Workload's fields the proxy keeps, the Service names
 * (from the proxy's clusters), the route configuration names (a gateway's), and the Authorization and
 * JwtPolicy resources.
 *
 * @module
 */
import { RESOURCE_TYPES, typeUrlOf } from "../../shared/mod.ts";
import { canonicalJson, lineDiff } from "../output.ts";
import type { ConfigDump } from "../proxy_admin.ts";
import { DUMP_TYPES, section } from "../proxy_config/sections.ts";

/** meshd's /debug/config_dump answer. */
export interface MeshdProxyDump {
  proxy: string;
  types: {
    typeUrl: string;
    version: string;
    resources: { name: string; value: Record<string, unknown> }[];
  }[];
}

/** The comparison of one type. */
export interface TypeDiff {
  /** Short name, e.g. `Workload`. */
  type: string;
  typeUrl: string;
  match: boolean;
  /** Diff lines: `-` meshd only, `+` proxy only. */
  diff: string[];
}

/** The fields of a Workload the proxy keeps (proxy/runtime/snapshot.ts WorkloadInfo). */
const WORKLOAD_FIELDS = [
  "name",
  "namespace",
  "serviceAccount",
  "trustDomain",
  "addresses",
  "labels",
  "proxied",
  "ports",
  "inboundMtls",
  "defaultMtls",
];

function pick(
  value: Record<string, unknown> | null | undefined,
  fields: string[],
): Record<string, unknown> | null {
  if (!value) return null;
  return Object.fromEntries(fields.map((f) => [f, value[f]]));
}

// deno-lint-ignore no-explicit-any
type Json = any;

/** The proxy's side of each type, in the shape meshd's side is reduced to. */
function proxySide(dump: ConfigDump): Record<string, unknown> {
  const mesh = section(dump, DUMP_TYPES.mesh) as Json;
  const clusters = section(dump, DUMP_TYPES.clusters) as Json;
  const services = [...new Set((clusters.dynamic_active_clusters ?? []).map((c: Json) => c.cluster.service))]
    .sort();
  return {
    [typeUrlOf(RESOURCE_TYPES.workload)]: pick(mesh.workload, WORKLOAD_FIELDS),
    [typeUrlOf(RESOURCE_TYPES.service)]: services,
    [typeUrlOf(RESOURCE_TYPES.authorization)]: mesh.authorizations?.resources ?? {},
    [typeUrlOf(RESOURCE_TYPES.jwtPolicy)]: mesh.jwt_policies?.resources ?? {},
    [typeUrlOf(RESOURCE_TYPES.routeConfiguration)]:
      (section(dump, DUMP_TYPES.routes).dynamic_route_configs ?? [])
        .map((r: Json) => r.route_config?.name).sort(),
    // Gateway credentials, by name: their key material is redacted on both sides.
    [typeUrlOf(RESOURCE_TYPES.tlsCredential)]:
      (section(dump, DUMP_TYPES.secrets).dynamic_active_secrets ?? [])
        .map((s: Json) => s.name).filter((n: string) => n.startsWith("kubernetes://")).sort(),
  };
}

function meshdSide(typeUrl: string, resources: MeshdProxyDump["types"][number]["resources"]): unknown {
  switch (typeUrl) {
    case typeUrlOf(RESOURCE_TYPES.workload):
      return pick(resources[0]?.value, WORKLOAD_FIELDS);
    case typeUrlOf(RESOURCE_TYPES.service):
    case typeUrlOf(RESOURCE_TYPES.routeConfiguration):
    case typeUrlOf(RESOURCE_TYPES.tlsCredential):
      return resources.map((r) => r.name).sort();
    default:
      return Object.fromEntries(resources.map((r) => [r.name, r.value]));
  }
}

/** Compares each type meshd serves the proxy. */
export function syncDiff(meshd: MeshdProxyDump, proxy: ConfigDump): TypeDiff[] {
  const held = proxySide(proxy);
  return meshd.types.map((t) => {
    const diff = lineDiff(
      canonicalJson(meshdSide(t.typeUrl, t.resources)),
      canonicalJson(held[t.typeUrl] ?? null),
    );
    return { type: t.typeUrl.split(".").pop()!, typeUrl: t.typeUrl, match: diff.length === 0, diff };
  });
}

/** istioctl's wording: `<Type> Match`, or `<Type> Don't Match` and the diff. */
export function formatSyncDiff(diffs: TypeDiff[]): string {
  return diffs.map((d) =>
    d.match ? `${d.type} Match\n` : `${d.type} Don't Match (- meshd, + proxy)\n${d.diff.join("\n")}\n`
  ).join("");
}
