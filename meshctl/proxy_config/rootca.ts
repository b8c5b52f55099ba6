/**
 * `proxy-config rootca-compare` and `proxy-config ecds` (meshctl seed "proxy-config"; istioctl's
 * istioctl/pkg/proxyconfig rootCACompareConfigCmd and ecdsConfigCmd, and the writer's
 * PrintPodRootCAFromDynamicSecretDump and PrintEcdsSummary): the ROOTCA of a dump's secrets and
 * whether two share a certificate, and the dump's extension config (ECDS) section.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import { isObject } from "../json_fields.ts";
import type { ConfigDump } from "../proxy_admin.ts";
import { table } from "../output.ts";
import { secrets } from "./sections.ts";

/** Envoy's admin type of the extension config (ECDS) section. */
export const ECDS_DUMP_TYPE = "type.googleapis.com/envoy.admin.v3.EcdsConfigDump";

/**
 * The ROOTCA PEM of a dump's dynamic active secrets (what istioctl compares).
 *
 * @throws Error naming `what` (the proxy or file) when there is no ROOTCA secret
 */
export function rootCaPem(dump: ConfigDump, what: string): string {
  const root = secrets(dump).find((s: { name?: string }) => s.name === "ROOTCA");
  const pem = root?.secret?.validation_context?.trusted_ca?.inline_string;
  if (typeof pem !== "string" || pem === "") throw new Error(`${what}: cannot find ROOTCA from secret`);
  return pem;
}

function certificates(pem: string, what: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    throw new Error(`${what}: failed to parse certificates: no PEM certificate in ROOTCA`);
  }
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new Error(`${what}: failed to parse certificate: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
}

/**
 * Whether two ROOTCA bundles share a certificate (byte for byte), as istioctl's
 * checkRootCACertMatchExist: a proxy trusts the other's certificates when one of its roots is the
 * other's.
 *
 * @throws Error naming the side whose PEM does not parse
 */
export function rootCasShareCertificate(
  a: { pem: string; what: string },
  b: { pem: string; what: string },
): boolean {
  const left = certificates(a.pem, a.what);
  const right = certificates(b.pem, b.what);
  return left.some((x) => right.some((y) => x.raw.equals(y.raw)));
}

/** istioctl's line for identical (`match`) or non-identical ROOTCAs of two `name.namespace` proxies. */
export function rootCaReport(first: string, second: string, match: boolean): string {
  return match
    ? `Both [${first}] and [${second}] have the identical ROOTCA, theoretically the connectivity between them is available`
    : `Both [${first}] and [${second}] have the non identical ROOTCA, theoretically the connectivity between them is unavailable`;
}

/**
 * The dump's ECDS section, merged as istioctl's GetEcdsConfigDump: every `ecds_filters` of every
 * EcdsConfigDump section; `{}` when there is none (what istioctl prints for an empty one). Our proxy
 * has no extension config discovery, so its dumps have no such section.
 */
export function ecdsDump(dump: ConfigDump): { ecds_filters?: unknown[] } {
  const filters = dump.configs.filter((c) => c["@type"] === ECDS_DUMP_TYPE)
    .flatMap((c) => Array.isArray(c.ecds_filters) ? c.ecds_filters : []);
  return filters.length > 0 ? { ecds_filters: filters } : {};
}

/** istioctl's ECDS summary: `ECDS NAME` and `TYPE` (without `type.googleapis.com/`), sorted by type, then name. */
export function ecdsTable(dump: ConfigDump): string {
  const entries = (ecdsDump(dump).ecds_filters ?? []).map((f) => {
    const e = isObject(f) && isObject(f.ecds_filter) ? f.ecds_filter : {};
    const type = isObject(e.typed_config) ? e.typed_config["@type"] : undefined;
    return {
      name: typeof e.name === "string" ? e.name : "",
      type: (typeof type === "string" ? type : "").replace(/^type\.googleapis\.com\//, ""),
    };
  })
    .sort((x, y) => x.type.localeCompare(y.type) || x.name.localeCompare(y.name));
  return table(["ECDS NAME", "TYPE"], entries.map((e) => [e.name, e.type]));
}
