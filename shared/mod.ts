/**
 * @mesh/shared: the mesh's resource types, their validation, and the pure policy logic that meshd,
 * the proxy and meshctl all call, so that all three agree.
 *
 * - Resource kinds of security.mesh.io/v1 and networking.mesh.io/v1 (Istio's groups are aliases):
 *   types, schemas and Istio's validation rules.
 * - {@link validateText}: a YAML stream to valid resources and located issues.
 * - SPIFFE identities: {@link parseSpiffeId}, {@link formatSpiffeId}.
 * - {@link effectivePeerAuthentication}: the mutual TLS mode of one workload port, as Istio composes it.
 * - {@link gatewayRouteConfigurations} and {@link selectRoute}: ingress gateway routing (Gateway, VirtualService);
 *   {@link parseTlsSecret}: gateway TLS credentials from Kubernetes Secrets.
 * - {@link compileAuthorization} and {@link authorize}: AuthorizationPolicy decisions (DENY, then ALLOW),
 *   naming the deciding policy and rule; {@link applicableAuthorizationPolicies}: a workload's policies,
 *   merged by action.
 * - {@link proxySettingsOf}: the mesh-wide data-path settings (path normalization, trusted hops, who may read
 *   denial explanations) pushed to proxies; {@link forwardedFor}: X-Forwarded-For and the trusted client address.
 * - {@link JwtAuthenticator}: RequestAuthentication's JWT verification (npm:jose), request principal
 *   `<iss>/<sub>`, claims and header edits; {@link applicableRequestAuthentications}.
 *
 * @example
 * ```ts
 * import { formatIssue, validateText } from "@mesh/shared";
 * const result = validateText("apiVersion: security.mesh.io/v1\nkind: PeerAuthentication\n", "pa.yaml");
 * for (const issue of result.issues) console.log(formatIssue(issue));
 * ```
 *
 * @module
 */
export * from "./api/mod.ts";
export * from "./validation/mod.ts";
export * from "./identity/mod.ts";
export * from "./policy/mod.ts";
export * from "./routing/mod.ts";
export * from "./protocol/mod.ts";
export * from "./credentials/mod.ts";
export { type BuildInfo, buildInfo } from "./build_info.ts";
export * from "./proto/mod.ts";
export * from "./proxy_settings/mod.ts";
