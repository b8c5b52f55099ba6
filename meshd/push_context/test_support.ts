/**
 * Tests only: config resources written inline, as the config store would hand them to
 * buildPushContext.
 *
 * @module
 */
import type { ObjectMeta } from "../../shared/mod.ts";
import type { ConfigResource, OfKind } from "./push_context.ts";
import type { SpecByKind, SpecKind } from "../../shared/mod.ts";

/**
 * A resource of `kind` in `namespace`; `spec` is checked against the kind's generated type, and
 * `metadata` adds to the name and namespace (labels, annotations).
 */
export function configResource<K extends SpecKind>(
  kind: K,
  namespace: string,
  name: string,
  spec: SpecByKind[K],
  metadata: Omit<ObjectMeta, "name" | "namespace"> = {},
): ConfigResource {
  // TypeScript cannot tie a generic `kind` to its `spec` in a union; the parameters do.
  return { kind, namespace, name, resource: { metadata: { name, namespace, ...metadata }, spec } } as OfKind<
    K
  >;
}

/** A Kubernetes `v1` Secret of `namespace` holding `data` (base64 values), as the config store hands it over. */
export function secretResource(
  namespace: string,
  name: string,
  data: Record<string, string>,
  type = "Opaque",
): ConfigResource {
  return {
    kind: "Secret",
    namespace,
    name,
    resource: { apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, type, data },
  };
}

/** A Gateway `mesh-system/public` for the `istio: ingressgateway` workloads: one HTTPS server per [port, name, credential]. */
export function httpsGateway(servers: [number, string, string][]): ConfigResource {
  return configResource("Gateway", "mesh-system", "public", {
    selector: { istio: "ingressgateway" },
    servers: servers.map(([number, name, credentialName]) => ({
      port: { number, name, protocol: "HTTPS" },
      hosts: ["*"],
      tls: { mode: "SIMPLE", credentialName },
    })),
  });
}
