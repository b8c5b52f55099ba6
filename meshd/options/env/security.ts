/**
 * meshd's environment variables (meshd seed, "Environment variables") of one component.
 * The certificate authority and authentication: the root and its rotation, workload certificate
 * lifetimes, bootstrap tokens, JWKS fetching and xDS client authentication.
 *
 * Each row has its seed type, default and description; a row with `noEffect` is read and
 * validated but used by nothing yet, and says why.
 *
 * @module
 */
import type { EnvVar } from "./env_var.ts";

const FIXED_NAMES =
  "meshd's serving certificate is issued by its CA for meshd.<namespace>.svc, localhost and 127.0.0.1";
const NO_COMPLIANCE = "no compliance policy is applied; TLS versions and cipher suites are Deno's";
const NO_NODE_AUTH =
  "node authentication is for node proxies that request certificates for the pods on their node (Istio's " +
  "ztunnel, ambient mode), which this mesh does not have; a CSR for another identity is refused";
const NO_SIGNER =
  "meshd signs with its own root (ROOT_CA_DIR, or its Secret in Kubernetes); Kubernetes CSR signers and " +
  "external CAs are not implemented";
const NO_XFCC = "no connection is trusted for XFCC by its address";
const ONE_ROOT = "the mesh has one trust anchor";
const OWN_AUTH = "meshd's own clients authenticate with mesh certificates and bootstrap tokens only";
const TRUST_DOMAIN_ALWAYS = "the trust domain is always checked";
const XDS_AUTH_ONLY = "XDS_AUTH alone decides whether xDS clients are authorized";

/** The variables of this part, in the seed's order. */
export const SECURITY_ENV = [
  {
    name: "AUDIENCE",
    type: "string",
    default: undefined,
    noEffect: OWN_AUTH,
    description: "Expected audience in tokens",
  },
  {
    name: "CA_TRUSTED_NODE_ACCOUNTS",
    noEffect: NO_NODE_AUTH,
    type: "string",
    default: undefined,
    description:
      "Service accounts allowed node authentication for certificate requests (creating requests for other identities when a pod with that identity runs on the same node); meant for node proxies",
  },
  {
    name: "CERT_SIGNER_DOMAIN",
    noEffect: NO_SIGNER,
    type: "string",
    default: undefined,
    description: "Certificate signer domain",
  },
  {
    name: "CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR",
    type: "bool",
    default: "true",
    description: "Jitter before starting the root cert rotator, below the check interval",
  },
  {
    name: "CA_SELF_SIGNED_CA_CERT_TTL",
    type: "duration",
    default: "87600h0m0s",
    min: 1,
    description: "Lifetime of the self-signed root CA certificate",
  },
  {
    name: "CA_SELF_SIGNED_CA_RSA_KEY_SIZE",
    type: "int",
    default: "2048",
    min: 1024,
    max: 16384,
    description: "RSA key size of self-signed CA certificates",
  },
  {
    name: "CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL",
    type: "duration",
    default: "1h0m0s",
    description:
      "Root cert expiry check and rotation interval; zero or negative disables rotation; suggested above 10 minutes",
  },
  {
    name: "CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE",
    type: "int",
    default: "20",
    min: 0,
    max: 100,
    description: "Grace period percentile for the self-signed root cert",
  },
  {
    name: "COMPLIANCE_POLICY",
    values: ["fips-140-2"],
    noEffect: NO_COMPLIANCE,
    type: "string",
    default: undefined,
    description:
      "Empty adds no restriction; fips-140-2 forces a TLS version and cipher subset over all user settings and defaults in all runtime components. Necessary but not sufficient for compliance",
  },
  {
    name: "DEFAULT_WORKLOAD_CERT_TTL",
    type: "duration",
    default: "24h0m0s",
    min: 1,
    description: "Lifetime of issued workload certs when the request sets a non-positive TTL",
  },
  {
    name: "ENABLE_CA_SERVER",
    type: "bool",
    default: "true",
    description: "When false, no CA server is created",
  },
  {
    name: "EXTERNAL_CA",
    values: ["MESHD_RA_ORCH_API"],
    noEffect: NO_SIGNER,
    type: "string",
    default: undefined,
    description: "External CA integration; permitted value MESHD_RA_ORCH_API",
  },
  {
    name: "MESHD_CUSTOM_HOST",
    noEffect: FIXED_NAMES,
    type: "string",
    default: undefined,
    description: "Custom host name(s) the daemon signs its server cert for; comma-separated",
  },
  {
    name: "MESH_MULTIROOT_MESH",
    noEffect: ONE_ROOT,
    type: "bool",
    default: "false",
    description: "Accept certs signed by more than one trust anchor for mesh-mutual TLS",
  },
  {
    name: "JWKS_RESOLVER_INSECURE_SKIP_VERIFY",
    type: "bool",
    default: "false",
    description: "Skip certificate verification of the JWKS server",
  },
  {
    name: "JWT_RULE",
    noEffect: OWN_AUTH,
    type: "string",
    default: undefined,
    description: "JWT rule used for the daemon's own authentication",
  },
  {
    name: "ORCH_SIGNER",
    type: "string",
    default: undefined,
    noEffect: NO_SIGNER,
    description: "Orchestrator CA signer type",
  },
  {
    name: "MAX_WORKLOAD_CERT_TTL",
    type: "duration",
    default: "2160h0m0s",
    min: 1,
    description: "Max lifetime of issued workload certs",
  },
  {
    name: "DISCO_CERT_PROVIDER",
    noEffect: FIXED_NAMES,
    type: "string",
    default: "meshd",
    description:
      "Provider of the daemon's DNS cert: orchestrator RA for k8s.io/NAME, meshd signs with built-in CA, other values issue no certs but still distribute the root cert. Used only when custom certs are not mounted",
  },
  {
    name: "DISCO_ENABLE_XDS_IDENTITY_CHECK",
    noEffect: XDS_AUTH_ONLY,
    type: "bool",
    default: "true",
    description: "Authorize xDS clients to act only as namespaces they may",
  },
  {
    name: "DISCO_JWT_ENABLE_REMOTE_JWKS",
    type: "string",
    default: "false",
    description:
      "Who fetches JWKS from jwksUri: meshd or false = daemon; hybrid or true = proxy, falling back to daemon when the JWKS server is external; proxy = proxy (OIDC discovery: always the daemon)",
  },
  {
    name: "DISCO_JWT_PUB_KEY_REFRESH_INTERVAL",
    type: "duration",
    default: "20m0s",
    description: "Daemon refresh interval for jwks_uri keys",
  },
  {
    name: "DISCO_SKIP_VALIDATE_TRUST_DOMAIN",
    noEffect: TRUST_DOMAIN_ALWAYS,
    type: "bool",
    default: "false",
    description: "Skip same-trust-domain check when mutual TLS is on",
  },
  {
    name: "ROOT_CA_DIR",
    type: "string",
    default: "./etc/cacerts",
    description: "Local or mounted CA root location",
  },
  {
    name: "TOKEN_AUDIENCES",
    type: "string",
    default: "mesh-ca",
    description: "Comma-separated audiences; a token matching any one is accepted before issuing a cert",
  },
  {
    name: "TOKEN_ISSUER",
    type: "string",
    default: undefined,
    description: "OIDC issuer used to check tokens",
  },
  {
    name: "TRUSTED_GATEWAY_CIDR",
    noEffect: NO_XFCC,
    type: "string",
    default: undefined,
    description:
      "Gateway connections from this range are trusted for mechanisms such as XFCC; only for secure networks",
  },
  {
    name: "USE_CACERTS_FOR_SELF_SIGNED_CA",
    type: "bool",
    default: "false",
    description: "Store the self-signed root in a secret named cacerts",
  },
  {
    name: "USE_REMOTE_CERTS",
    noEffect: NO_SIGNER,
    type: "bool",
    default: "false",
    description: "Load CA certs from the config cluster (external daemon)",
  },
  { name: "XDS_AUTH", type: "bool", default: "true", description: "Authenticate xDS clients" },
  {
    name: "XDS_AUTH_PLAINTEXT",
    type: "bool",
    default: "false",
    description: "Authenticate plain-text requests; for trusted networks",
  },
] as const satisfies readonly EnvVar[];
