/**
 * Gateway (networking.mesh.io/v1): the ports, protocols, hosts and TLS settings a gateway proxy at
 * the mesh edge listens with. Fields are Istio's networking/v1 Gateway
 * (istio.io/latest/docs/reference/config/networking/gateway); rules are Istio's ValidateGateway,
 * validateServer, validateServerPort, validateServerBind and validateTLSOptions.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import { closed, ResourceEnvelope, StringEnum, StringList } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import {
  asArray,
  asObject,
  asString,
  isDns1123Label,
  isHttpProtocol,
  isTlsProtocol,
  type Obj,
  parseProtocol,
  partialWildcardProblem,
  unixAddressProblem,
  unsupportedProtocolMessage,
  wildcardDomainProblem,
} from "./networking_rules.ts";
import { isIp } from "./ip.ts";
import { UNIX_ADDRESS_PREFIX } from "./workload_entry.ts";

/** Server TLS modes; unset means PASSTHROUGH, the proto's zero value. */
export const SERVER_TLS_MODES = [
  "PASSTHROUGH",
  "SIMPLE",
  "MUTUAL",
  "AUTO_PASSTHROUGH",
  "ISTIO_MUTUAL",
  "OPTIONAL_MUTUAL",
] as const;

/** TLS protocol versions. */
export const TLS_PROTOCOL_VERSIONS = ["TLS_AUTO", "TLSV1_0", "TLSV1_1", "TLSV1_2", "TLSV1_3"] as const;

/** Cipher suites a gateway accepts by name (Istio's security.ValidCipherSuites). */
export const VALID_CIPHER_SUITES: ReadonlySet<string> = new Set([
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
  "ECDHE-ECDSA-AES128-SHA",
  "ECDHE-RSA-AES128-SHA",
  "ECDHE-ECDSA-AES256-SHA",
  "ECDHE-RSA-AES256-SHA",
  "AES128-GCM-SHA256",
  "AES256-GCM-SHA384",
  "AES128-SHA",
  "AES256-SHA",
  "DES-CBC3-SHA",
]);

/** networking.v1.Port: a port a gateway listens on. */
export const Port = Type.Object({
  number: Type.Integer({
    minimum: 0,
    maximum: 65535,
    description: "Port number, 1-65535; 0 only with a unix bind",
  }),
  protocol: Type.String({
    description: "HTTP, HTTPS, GRPC, GRPC-WEB, HTTP2, MONGO, TCP, TLS, REDIS or MYSQL (any case)",
  }),
  name: Type.String({ description: "Port name, unique across the gateway's servers" }),
  targetPort: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 4294967295,
    description: "Deprecated; has no effect on gateways",
  })),
}, { ...closed, title: "Port", description: "A port the gateway listens on" });

const TLSCertificate = Type.Object({
  serverCertificate: Type.Optional(Type.String({ description: "Path of the PEM server certificate" })),
  privateKey: Type.Optional(Type.String({ description: "Path of the PEM private key" })),
  caCertificates: Type.Optional(
    Type.String({ description: "Path of the PEM CA bundle for client certificates" }),
  ),
}, { ...closed, title: "ServerTLSCertificate", description: "A certificate and key pair, from files" });

/** networking.v1.ServerTLSSettings. */
export const ServerTLSSettings = Type.Object({
  httpsRedirect: Type.Optional(
    Type.Boolean({ description: "On an HTTP server: answer 301 to move clients to HTTPS" }),
  ),
  mode: Type.Optional(StringEnum(SERVER_TLS_MODES, "How TLS is handled; default PASSTHROUGH")),
  serverCertificate: Type.Optional(
    Type.String({ description: "SIMPLE/MUTUAL: path of the PEM server certificate" }),
  ),
  privateKey: Type.Optional(Type.String({ description: "SIMPLE/MUTUAL: path of the PEM private key" })),
  caCertificates: Type.Optional(
    Type.String({ description: "MUTUAL: path of the PEM CA bundle for clients" }),
  ),
  caCrl: Type.Optional(Type.String({ description: "Path of the certificate revocation list for clients" })),
  credentialName: Type.Optional(
    Type.String({ description: "Secret with the certificate, key and CA bundle" }),
  ),
  credentialNames: Type.Optional(Type.Array(Type.String(), {
    minItems: 1,
    maxItems: 2,
    description: "Up to two secrets (e.g. an RSA and an ECDSA certificate)",
  })),
  caCertCredentialName: Type.Optional(
    Type.String({ description: "Secret or ConfigMap with the client CA bundle" }),
  ),
  tlsCertificates: Type.Optional(Type.Array(TLSCertificate, {
    minItems: 1,
    maxItems: 2,
    description: "Up to two certificates from files",
  })),
  subjectAltNames: Type.Optional(StringList("SANs a client certificate must carry one of")),
  verifyCertificateSpki: Type.Optional(
    StringList("Base64 SHA-256 SPKI hashes of accepted client certificates"),
  ),
  verifyCertificateHash: Type.Optional(StringList("Hex SHA-256 hashes of accepted client certificates")),
  minProtocolVersion: Type.Optional(StringEnum(TLS_PROTOCOL_VERSIONS, "Minimum TLS version")),
  maxProtocolVersion: Type.Optional(StringEnum(TLS_PROTOCOL_VERSIONS, "Maximum TLS version")),
  cipherSuites: Type.Optional(StringList("Cipher suites allowed; default: Envoy's")),
  ecdhCurves: Type.Optional(StringList("ECDH curves allowed; default: Envoy's")),
  insecureSkipVerify: Type.Optional(
    Type.Boolean({ description: "Accept client certificates that fail verification" }),
  ),
}, { ...closed, title: "ServerTLSSettings", description: "TLS settings of a server" });

const Server = Type.Object({
  port: Port,
  bind: Type.Optional(Type.String({ description: "IP or unix:///path the listener binds to; default all" })),
  hosts: StringList("Hosts exposed, as [namespace/]host: namespace is *, . or a name; host may be *.domain"),
  tls: Type.Optional(ServerTLSSettings),
  defaultEndpoint: Type.Optional(
    Type.String({ description: "Sidecar ingress only: 127.0.0.1:PORT or unix path" }),
  ),
  name: Type.Optional(Type.String({ description: "Optional name, unique across servers" })),
}, { ...closed, title: "Server", description: "A listener of the gateway" });

const GatewaySpec = Type.Object({
  servers: Type.Optional(Type.Array(Server, { description: "The gateway's listeners; at least one" })),
  selector: Type.Optional(Type.Record(Type.String(), Type.String(), {
    description: "Labels of the gateway pods this configuration applies to",
  })),
}, {
  ...closed,
  title: "GatewaySpec",
  description: "Listeners of the gateway pods picked by selector; routing comes from VirtualServices",
});

/**
 * Istio's ValidateNamespaceSlashWildcardHostname for a gateway: `[namespace/]host`, where
 * namespace is `*`, `.` or a namespace name and host is `*`, `*.domain`, a domain with a dot, or an IP.
 */
export function checkGatewayHost(host: string, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const slash = host.indexOf("/");
  let name = host;
  if (slash >= 0) {
    const ns = host.slice(0, slash);
    name = host.slice(slash + 1);
    if (ns === "" || name === "") out.push(error(at, "namespace and host in namespace/host cannot be empty"));
    else if (ns !== "*" && ns !== "." && !isDns1123Label(ns)) {
      out.push(error(at, `invalid namespace "${ns}" in host`));
    }
  }
  if (name === "") return out;
  if (name !== "*" && !name.includes(".")) {
    out.push(error(at, `short name "${name}" is not allowed: use a fully qualified name, *.domain or *`));
  }
  const problem = wildcardDomainProblem(name);
  if (problem && !isIp(name)) out.push(error(at, problem));
  const partial = partialWildcardProblem(name);
  if (partial) out.push(error(at, partial));
  return out;
}

function checkPort(port: Obj, bind: string, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const proto = asString(port.protocol);
  if (proto !== undefined && !parseProtocol(proto)) {
    out.push(error([...at, "protocol"], unsupportedProtocolMessage(proto)));
  }
  if (port.number === 0 && !bind.startsWith(UNIX_ADDRESS_PREFIX)) {
    out.push(error([...at, "number"], "port number must be in 1..65535 (0 only with a unix:// bind)"));
  }
  if (typeof port.targetPort === "number" && port.targetPort > 0) {
    out.push(error([...at, "targetPort"], "targetPort has no effect on gateways; remove it"));
  }
  if (port.name === "") out.push(error([...at, "name"], "port name must be set"));
  return out;
}

function checkBind(bind: string, port: Obj | undefined, at: FieldPath): Finding[] {
  if (bind.startsWith(UNIX_ADDRESS_PREFIX)) {
    const out: Finding[] = [];
    const problem = unixAddressProblem(bind.slice(UNIX_ADDRESS_PREFIX.length));
    if (problem) out.push(error([...at, "bind"], problem));
    if (typeof port?.number === "number" && port.number !== 0) {
      out.push(error([...at, "port", "number"], "port number must be 0 with a unix:// bind"));
    }
    return out;
  }
  if (bind !== "" && !isIp(bind)) {
    return [error([...at, "bind"], `bind "${bind}" is not a valid IP address`)];
  }
  return [];
}

function certSources(tls: Obj): string[] {
  const sources: string[] = [];
  if (asString(tls.serverCertificate) && asString(tls.privateKey)) {
    sources.push("serverCertificate/privateKey");
  }
  if (asString(tls.credentialName)) sources.push("credentialName");
  if (asArray(tls.credentialNames).length > 0) sources.push("credentialNames");
  if (asArray(tls.tlsCertificates).length > 0) sources.push("tlsCertificates");
  return sources;
}

/** Istio's validateTLSOptions on a server's `tls`. */
export function checkServerTls(tls: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const mode = asString(tls.mode) ?? "PASSTHROUGH";
  const ciphers = asArray(tls.cipherSuites).filter((c): c is string => typeof c === "string");
  if (
    (tls.minProtocolVersion === "TLSV1_0" || tls.minProtocolVersion === "TLSV1_1") && ciphers.length === 0
  ) {
    out.push(warning(
      [...at, "minProtocolVersion"],
      "TLS versions below 1.2 need cipherSuites: the default ciphers no longer include compatible ones",
    ));
  }
  const seen = new Set<string>();
  ciphers.forEach((c, i) => {
    // Like Envoy, names starting with an operator (-, +, !, [) are cipher expressions, not checked.
    const expression = c === "" || c === "ALL" || !/^[\p{L}\p{N}]/u.test(c);
    if (!expression && !VALID_CIPHER_SUITES.has(c)) {
      out.push(warning([...at, "cipherSuites", i], `unknown cipher suite "${c}" is ignored`));
    } else if (seen.has(c)) {
      out.push(warning([...at, "cipherSuites", i], `duplicate cipher suite "${c}" is ignored`));
    }
    seen.add(c);
  });
  if (mode === "ISTIO_MUTUAL") {
    // The mesh's own certificates are used; any other certificate source would be ignored.
    for (const f of ["serverCertificate", "privateKey", "caCertificates", "credentialName"]) {
      if (asString(tls[f])) out.push(error([...at, f], `ISTIO_MUTUAL TLS cannot have ${f}`));
    }
    for (const f of ["tlsCertificates", "credentialNames"]) {
      if (asArray(tls[f]).length > 0) out.push(error([...at, f], `ISTIO_MUTUAL TLS cannot have ${f}`));
    }
    return out;
  }
  const sources = certSources(tls);
  if (mode === "PASSTHROUGH" || mode === "AUTO_PASSTHROUGH") {
    const files = ["caCrl", "serverCertificate", "privateKey", "caCertificates"].some((f) =>
      asString(tls[f])
    );
    if (sources.length > 0 || files) {
      out.push(warning(at, `${mode} mode does not terminate TLS; its certificates are ignored`));
    }
  }
  if (sources.length > 1) {
    out.push(error(at, `only one certificate source may be set; got ${sources.join(", ")}`));
  }
  const terminates = mode === "SIMPLE" || mode === "MUTUAL" || mode === "OPTIONAL_MUTUAL";
  // With a credential the certificates come from a secret, so the file fields are not needed.
  if (terminates && (asString(tls.credentialName) || asArray(tls.credentialNames).length > 0)) return out;
  if (terminates) {
    const prefix = mode === "SIMPLE" ? "SIMPLE TLS" : "MUTUAL TLS";
    if (mode !== "SIMPLE" && !asString(tls.caCertificates)) {
      out.push(error(at, `${prefix} requires caCertificates (the client CA bundle), or a credentialName`));
    }
    const certs = asArray(tls.tlsCertificates);
    const pairs: [Obj, FieldPath][] = certs.length > 0
      ? certs.map((c, i) => [asObject(c) ?? {}, [...at, "tlsCertificates", i]])
      : [[tls, at]];
    for (const [cert, cat] of pairs) {
      if (!asString(cert.serverCertificate)) {
        out.push(error(cat, `${prefix} requires serverCertificate, or a credentialName`));
      }
      if (!asString(cert.privateKey)) {
        out.push(error(cat, `${prefix} requires privateKey, or a credentialName`));
      }
    }
  }
  if (asString(tls.caCrl)) {
    if (asString(tls.credentialName)) {
      out.push(
        error([...at, "caCrl"], "caCrl is not supported with credentialName; put the CRL in the credential"),
      );
    }
    if (mode === "SIMPLE") out.push(error([...at, "caCrl"], "caCrl is not supported with SIMPLE TLS"));
  }
  return out;
}

/** Istio's validateServer on one server. */
function checkServer(server: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  if (Array.isArray(server.hosts)) {
    if (server.hosts.length === 0) out.push(error([...at, "hosts"], "a server needs at least one host"));
    server.hosts.forEach((h, i) => {
      if (typeof h === "string") out.push(...checkGatewayHost(h, [...at, "hosts", i]));
    });
  }
  const bind = asString(server.bind) ?? "";
  const port = asObject(server.port);
  const portFindings = port ? checkPort(port, bind, [...at, "port"]) : [];
  out.push(...portFindings, ...checkBind(bind, port, at));
  const tls = asObject(server.tls);
  if (tls) out.push(...checkServerTls(tls, [...at, "tls"]));
  const proto = parseProtocol(port?.protocol);
  if (portFindings.length === 0 && proto) {
    if (isTlsProtocol(proto) && !tls) {
      out.push(error(at, `${proto} servers need tls settings (mode and certificates)`));
    } else if (!isTlsProtocol(proto) && tls) {
      // On a plain HTTP port tls may only carry httpsRedirect (with the default PASSTHROUGH mode).
      const mode = asString(tls.mode) ?? "PASSTHROUGH";
      const passthrough = mode === "PASSTHROUGH" || mode === "AUTO_PASSTHROUGH";
      const files = asString(tls.caCertificates) || asString(tls.privateKey) ||
        asString(tls.serverCertificate);
      if (!isHttpProtocol(proto)) {
        out.push(
          error([...at, "tls"], `${proto} servers cannot have tls settings; use protocol HTTPS or TLS`),
        );
      } else if (!passthrough || files) {
        out.push(error([...at, "tls"], "a plain text HTTP server can only have tls.httpsRedirect"));
      }
    }
  }
  return out;
}

/**
 * Istio's ValidateGateway on a whole resource.
 *
 * @returns the findings; the resource may be any parsed value
 */
export function gatewayRules(resource: unknown): Finding[] {
  const out: Finding[] = [];
  const name = asString(asObject(asObject(resource)?.metadata)?.name);
  if (name !== undefined && !isDns1123Label(name)) {
    out.push(
      error(["metadata", "name"], `invalid Gateway name "${name}": must be a DNS-1123 label (no dots)`),
    );
  }
  const spec = asObject(asObject(resource)?.spec);
  if (!spec) return out;
  const servers = asArray(spec.servers);
  if (servers.length === 0) out.push(error(["spec", "servers"], "a gateway needs at least one server"));
  const portNames = new Set<string>();
  const serverNames = new Set<string>();
  servers.forEach((s, i) => {
    const server = asObject(s);
    const at = ["spec", "servers", i];
    if (!server) return;
    out.push(...checkServer(server, at));
    const port = asObject(server.port);
    const portName = asString(port?.name);
    if (portName !== undefined) {
      if (portNames.has(portName)) {
        out.push(
          error(
            [...at, "port", "name"],
            `port names must be unique across servers: "${portName}" is repeated`,
          ),
        );
      }
      portNames.add(portName);
    }
    if (
      asObject(server.tls)?.httpsRedirect === true && port && !isHttpProtocol(parseProtocol(port.protocol))
    ) {
      out.push(warning([...at, "tls", "httpsRedirect"], "httpsRedirect only has an effect on HTTP servers"));
    }
    const serverName = asString(server.name);
    if (serverName) {
      if (serverNames.has(serverName)) {
        out.push(warning([...at, "name"], `server names should be unique: "${serverName}" is repeated`));
      }
      serverNames.add(serverName);
    }
  });
  return out;
}

/** Gateway: schema and Istio's rules. */
export const gateway = defineKind({
  kind: "Gateway",
  group: "networking",
  plural: "gateways",
  schema: ResourceEnvelope(
    "Gateway",
    GatewaySpec,
    "A load balancer at the mesh edge: the ports, protocols, hosts and TLS its proxies listen with",
  ),
  rules(gw): Finding[] {
    return gatewayRules(gw);
  },
});
