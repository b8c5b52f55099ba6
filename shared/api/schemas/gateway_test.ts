import assert from "node:assert/strict";
import { assertFindingOrValid } from "./_test_support.ts";
import { parseAllDocuments } from "yaml";
import { type Finding, formatFieldPath, type Severity } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { gateway } from "./gateway.ts";

/** One rule exercised: the spec, and the finding it must produce (none: it must produce no error). */
interface Case {
  name: string;
  spec: Record<string, unknown>;
  /** metadata.name; default `gw`. */
  resourceName?: string;
  want?: { path: string; message: string; severity?: Severity };
}

const show = (f: Finding): string => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`;

const http = { port: { number: 80, name: "http", protocol: "HTTP" }, hosts: ["*.example.com"] };
const https = {
  port: { number: 443, name: "https", protocol: "HTTPS" },
  hosts: ["*.example.com"],
  tls: { mode: "SIMPLE", credentialName: "example-cert" },
};
const one = (server: Record<string, unknown>): Record<string, unknown> => ({ servers: [server] });
const withTls = (tls: Record<string, unknown>): Record<string, unknown> => one({ ...https, tls });

const cases: Case[] = [
  // Schema
  {
    name: "schema: unknown server field",
    spec: one({ ...http, host: "x" }),
    want: { path: "spec.servers[0].host", message: "unknown field" },
  },
  {
    name: "schema: port is required",
    spec: one({ hosts: ["*"] }),
    want: { path: "spec.servers[0].port", message: "required" },
  },
  {
    name: "schema: port name is required",
    spec: one({ ...http, port: { number: 80, protocol: "HTTP" } }),
    want: { path: "spec.servers[0].port.name", message: "required" },
  },
  {
    name: "schema: port number range",
    spec: one({ ...http, port: { ...http.port, number: 65536 } }),
    want: { path: "spec.servers[0].port.number", message: "less or equal to 65535" },
  },
  {
    name: "schema: TLS mode enum",
    spec: withTls({ mode: "STRICT" }),
    want: { path: "spec.servers[0].tls.mode", message: "must be one of PASSTHROUGH" },
  },
  {
    name: "schema: at most two credentialNames",
    spec: withTls({ mode: "SIMPLE", credentialNames: ["a", "b", "c"] }),
    want: { path: "spec.servers[0].tls.credentialNames", message: "less or equal to 2" },
  },
  // Name and servers
  {
    name: "name: must be a DNS label",
    spec: one(http),
    resourceName: "my.gateway",
    want: { path: "metadata.name", message: "DNS-1123 label" },
  },
  {
    name: "servers: required",
    spec: { selector: { istio: "ingressgateway" } },
    want: { path: "spec.servers", message: "at least one server" },
  },
  {
    name: "servers: empty",
    spec: { servers: [] },
    want: { path: "spec.servers", message: "at least one server" },
  },
  // Hosts
  {
    name: "hosts: empty",
    spec: one({ ...http, hosts: [] }),
    want: { path: "spec.servers[0].hosts", message: "at least one host" },
  },
  { name: "hosts: * ok", spec: one({ ...http, hosts: ["*"] }) },
  {
    name: "hosts: namespace/host ok",
    spec: one({ ...http, hosts: ["bookinfo/*.bookinfo.com", "./a.example.com", "*/b.example.com"] }),
  },
  { name: "hosts: IP ok", spec: one({ ...http, hosts: ["10.0.0.1"] }) },
  {
    name: "hosts: short name",
    spec: one({ ...http, hosts: ["reviews"] }),
    want: { path: "spec.servers[0].hosts[0]", message: 'short name "reviews"' },
  },
  {
    name: "hosts: invalid namespace",
    spec: one({ ...http, hosts: ["Bad_NS/a.example.com"] }),
    want: { path: "spec.servers[0].hosts[0]", message: 'invalid namespace "Bad_NS"' },
  },
  {
    name: "hosts: empty host after slash",
    spec: one({ ...http, hosts: ["ns/"] }),
    want: { path: "spec.servers[0].hosts[0]", message: "cannot be empty" },
  },
  {
    name: "hosts: partial wildcard",
    spec: one({ ...http, hosts: ["*foo.example.com"] }),
    want: { path: "spec.servers[0].hosts[0]", message: "partial wildcard" },
  },
  {
    name: "hosts: invalid domain",
    spec: one({ ...http, hosts: ["a..example.com"] }),
    want: { path: "spec.servers[0].hosts[0]", message: 'label "" invalid' },
  },
  // Port
  {
    name: "port: unknown protocol",
    spec: one({ ...http, port: { ...http.port, protocol: "SMTP" } }),
    want: { path: "spec.servers[0].port.protocol", message: 'unsupported protocol "SMTP"' },
  },
  {
    name: "port: protocol is case-insensitive",
    spec: one({ ...http, port: { ...http.port, protocol: "http" } }),
  },
  {
    name: "port: number 0 without unix bind",
    spec: one({ ...http, port: { ...http.port, number: 0 } }),
    want: { path: "spec.servers[0].port.number", message: "0 only with a unix:// bind" },
  },
  {
    name: "port: targetPort has no effect",
    spec: one({ ...http, port: { ...http.port, targetPort: 8080 } }),
    want: { path: "spec.servers[0].port.targetPort", message: "no effect on gateways" },
  },
  {
    name: "port: empty name",
    spec: one({ ...http, port: { ...http.port, name: "" } }),
    want: { path: "spec.servers[0].port.name", message: "port name must be set" },
  },
  {
    name: "port: names unique across servers",
    spec: { servers: [http, { ...http, port: { ...http.port, number: 8080 } }] },
    want: { path: "spec.servers[1].port.name", message: 'port names must be unique across servers: "http"' },
  },
  // Bind
  { name: "bind: IP ok", spec: one({ ...http, bind: "10.0.0.1" }) },
  {
    name: "bind: unix socket with port 0 ok",
    spec: one({ ...http, bind: "unix:///var/run/gw.sock", port: { ...http.port, number: 0 } }),
  },
  {
    name: "bind: not an IP",
    spec: one({ ...http, bind: "localhost" }),
    want: { path: "spec.servers[0].bind", message: "not a valid IP address" },
  },
  {
    name: "bind: unix socket needs port 0",
    spec: one({ ...http, bind: "unix:///var/run/gw.sock" }),
    want: { path: "spec.servers[0].port.number", message: "must be 0 with a unix:// bind" },
  },
  {
    name: "bind: unix socket path",
    spec: one({ ...http, bind: "unix://gw.sock", port: { ...http.port, number: 0 } }),
    want: { path: "spec.servers[0].bind", message: "not an absolute path" },
  },
  // TLS presence
  {
    name: "tls: required for HTTPS",
    spec: one({ ...https, tls: undefined }),
    want: { path: "spec.servers[0]", message: "HTTPS servers need tls settings" },
  },
  {
    name: "tls: required for TLS",
    spec: one({ ...https, port: { number: 443, name: "tls", protocol: "TLS" }, tls: undefined }),
    want: { path: "spec.servers[0]", message: "TLS servers need tls settings" },
  },
  { name: "tls: httpsRedirect on HTTP ok", spec: one({ ...http, tls: { httpsRedirect: true } }) },
  {
    name: "tls: HTTP server can only redirect",
    spec: one({ ...http, tls: { mode: "SIMPLE", credentialName: "c" } }),
    want: { path: "spec.servers[0].tls", message: "can only have tls.httpsRedirect" },
  },
  {
    name: "tls: not on TCP servers",
    spec: one({
      ...http,
      port: { number: 9000, name: "tcp", protocol: "TCP" },
      tls: { mode: "SIMPLE", credentialName: "c" },
    }),
    want: { path: "spec.servers[0].tls", message: "TCP servers cannot have tls settings" },
  },
  {
    name: "tls: httpsRedirect on a non-HTTP server warns",
    spec: withTls({ mode: "SIMPLE", credentialName: "c", httpsRedirect: true }),
    want: {
      path: "spec.servers[0].tls.httpsRedirect",
      message: "only has an effect on HTTP",
      severity: "warning",
    },
  },
  // TLS options
  {
    name: "tls: SIMPLE with files ok",
    spec: withTls({ mode: "SIMPLE", serverCertificate: "/c.pem", privateKey: "/k.pem" }),
  },
  { name: "tls: PASSTHROUGH ok", spec: withTls({ mode: "PASSTHROUGH" }) },
  {
    name: "tls: SIMPLE needs a certificate",
    spec: withTls({ mode: "SIMPLE", privateKey: "/k.pem" }),
    want: { path: "spec.servers[0].tls", message: "SIMPLE TLS requires serverCertificate" },
  },
  {
    name: "tls: SIMPLE needs a key",
    spec: withTls({ mode: "SIMPLE", serverCertificate: "/c.pem" }),
    want: { path: "spec.servers[0].tls", message: "SIMPLE TLS requires privateKey" },
  },
  {
    name: "tls: tlsCertificates entries need both files",
    spec: withTls({ mode: "SIMPLE", tlsCertificates: [{ serverCertificate: "/c.pem" }] }),
    want: { path: "spec.servers[0].tls.tlsCertificates[0]", message: "SIMPLE TLS requires privateKey" },
  },
  {
    name: "tls: MUTUAL needs a CA bundle",
    spec: withTls({ mode: "MUTUAL", serverCertificate: "/c.pem", privateKey: "/k.pem" }),
    want: { path: "spec.servers[0].tls", message: "MUTUAL TLS requires caCertificates" },
  },
  { name: "tls: MUTUAL with credentialName ok", spec: withTls({ mode: "MUTUAL", credentialName: "c" }) },
  {
    name: "tls: one certificate source",
    spec: withTls({ mode: "SIMPLE", credentialName: "c", serverCertificate: "/c.pem", privateKey: "/k.pem" }),
    want: { path: "spec.servers[0].tls", message: "only one certificate source" },
  },
  {
    name: "tls: ISTIO_MUTUAL takes no certificates",
    spec: withTls({ mode: "ISTIO_MUTUAL", credentialName: "c" }),
    want: {
      path: "spec.servers[0].tls.credentialName",
      message: "ISTIO_MUTUAL TLS cannot have credentialName",
    },
  },
  {
    name: "tls: PASSTHROUGH ignores certificates",
    spec: withTls({ mode: "PASSTHROUGH", credentialName: "c" }),
    want: { path: "spec.servers[0].tls", message: "certificates are ignored", severity: "warning" },
  },
  {
    name: "tls: caCrl not with SIMPLE",
    spec: withTls({ mode: "SIMPLE", serverCertificate: "/c.pem", privateKey: "/k.pem", caCrl: "/crl.pem" }),
    want: { path: "spec.servers[0].tls.caCrl", message: "not supported with SIMPLE TLS" },
  },
  {
    name: "tls: caCrl not with credentialName",
    spec: withTls({ mode: "PASSTHROUGH", credentialName: "c", caCrl: "/crl.pem" }),
    want: { path: "spec.servers[0].tls.caCrl", message: "not supported with credentialName" },
  },
  {
    name: "tls: old TLS versions need ciphers",
    spec: withTls({ mode: "SIMPLE", credentialName: "c", minProtocolVersion: "TLSV1_1" }),
    want: {
      path: "spec.servers[0].tls.minProtocolVersion",
      message: "need cipherSuites",
      severity: "warning",
    },
  },
  {
    name: "tls: unknown cipher suite",
    spec: withTls({
      mode: "SIMPLE",
      credentialName: "c",
      cipherSuites: ["ECDHE-RSA-AES128-GCM-SHA256", "RC4-MD5"],
    }),
    want: {
      path: "spec.servers[0].tls.cipherSuites[1]",
      message: 'unknown cipher suite "RC4-MD5"',
      severity: "warning",
    },
  },
  {
    name: "tls: duplicate cipher suite",
    spec: withTls({ mode: "SIMPLE", credentialName: "c", cipherSuites: ["AES128-SHA", "AES128-SHA"] }),
    want: {
      path: "spec.servers[0].tls.cipherSuites[1]",
      message: "duplicate cipher suite",
      severity: "warning",
    },
  },
  // Server names
  {
    name: "server names should be unique",
    spec: { servers: [{ ...http, name: "a" }, { ...https, name: "a" }] },
    want: { path: "spec.servers[1].name", message: "should be unique", severity: "warning" },
  },
];

for (const c of cases) {
  Deno.test(`Gateway: ${c.name}`, () => {
    const findings = validateResource(gateway, {
      apiVersion: "networking.mesh.io/v1",
      kind: "Gateway",
      metadata: { name: c.resourceName ?? "gw", namespace: "ns" },
      spec: JSON.parse(JSON.stringify(c.spec)),
    });
    assertFindingOrValid(findings, c.want);
  });
}

/** The Gateway of Istio's authentication task, and examples from istio.io's Gateway reference. */
const ISTIO_EXAMPLES = [
  new URL("../../../tests/fixtures/istio/authn-policy/06_httpbin_gateway_foo.yaml", import.meta.url),
  `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: my-gateway
  namespace: some-config-namespace
spec:
  selector:
    app: my-gateway-controller
  servers:
  - port:
      number: 80
      name: http
      protocol: HTTP
    hosts:
    - uk.bookinfo.com
    - eu.bookinfo.com
    tls:
      httpsRedirect: true # sends 301 redirect for http requests
  - port:
      number: 443
      name: https-443
      protocol: HTTPS
    hosts:
    - uk.bookinfo.com
    - eu.bookinfo.com
    tls:
      mode: SIMPLE # enables HTTPS on this port
      serverCertificate: /etc/certs/servercert.pem
      privateKey: /etc/certs/privatekey.pem
  - port:
      number: 9443
      name: https-9443
      protocol: HTTPS
    hosts:
    - "bookinfo-namespace/*.bookinfo.com"
    tls:
      mode: SIMPLE # enables HTTPS on this port
      credentialName: bookinfo-secret # fetches certs from Kubernetes secret
  - port:
      number: 9080
      name: http-wildcard
      protocol: HTTP
    hosts:
    - "*"
  - port:
      number: 2379 # to expose internal service via external port 2379
      name: mongo
      protocol: MONGO
    hosts:
    - "*"
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: my-tcp-ingress
spec:
  selector:
    app: my-tcp-ingressgateway-controller
  servers:
  - port:
      number: 27018
      name: mongo-ingress
      protocol: MONGO
    hosts:
    - "*"
`,
];

for (const source of ISTIO_EXAMPLES) {
  const text = typeof source === "string" ? source : Deno.readTextFileSync(source);
  for (const doc of parseAllDocuments(text)) {
    const resource = doc.toJS();
    if (resource.kind !== "Gateway") continue;
    Deno.test(`Gateway: Istio example ${resource.metadata.name} is clean`, () => {
      assert.deepEqual(validateResource(gateway, resource).map(show), []);
    });
  }
}
