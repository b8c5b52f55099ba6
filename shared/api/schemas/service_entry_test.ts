import assert from "node:assert/strict";
import { assertFindingOrValid } from "./_test_support.ts";
import { parseAllDocuments } from "yaml";
import { type Finding, formatFieldPath, type Severity } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { serviceEntry } from "./service_entry.ts";

/** One rule exercised: the spec, and the finding it must produce (none: it must produce no error). */
interface Case {
  name: string;
  spec: Record<string, unknown>;
  labels?: Record<string, string>;
  want?: { path: string; message: string; severity?: Severity };
}

const show = (f: Finding): string => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`;

const tlsPort = { number: 443, name: "https", protocol: "TLS" };
const httpPort = { number: 80, name: "http", protocol: "HTTP" };
const dns = { hosts: ["api.example.com"], ports: [tlsPort], resolution: "DNS" };
const stat = {
  hosts: ["db.example.com"],
  ports: [{ number: 5432, name: "tcp", protocol: "TCP" }],
  resolution: "STATIC",
};
const dyn = { hosts: ["*.example.com"], ports: [httpPort], resolution: "DYNAMIC_DNS" };

const cases: Case[] = [
  // Schema
  {
    name: "schema: unknown field",
    spec: { ...dns, hostz: [] },
    want: { path: "spec.hostz", message: "unknown field" },
  },
  {
    name: "schema: hosts is required",
    spec: { ports: [tlsPort] },
    want: { path: "spec.hosts", message: "required" },
  },
  {
    name: "schema: location enum",
    spec: { ...dns, location: "EXTERNAL" },
    want: { path: "spec.location", message: "must be one of MESH_EXTERNAL, MESH_INTERNAL" },
  },
  {
    name: "schema: resolution enum",
    spec: { ...dns, resolution: "dns" },
    want: { path: "spec.resolution", message: "must be one of NONE" },
  },
  {
    name: "schema: port number 0",
    spec: { ...dns, ports: [{ ...tlsPort, number: 0 }] },
    want: { path: "spec.ports[0].number", message: "greater or equal to 1" },
  },
  {
    name: "schema: port number above 65535",
    spec: { ...dns, ports: [{ ...tlsPort, number: 65536 }] },
    want: { path: "spec.ports[0].number", message: "less or equal to 65535" },
  },
  {
    name: "schema: targetPort range",
    spec: { ...dns, ports: [{ ...tlsPort, targetPort: 70000 }] },
    want: { path: "spec.ports[0].targetPort", message: "less or equal to 65535" },
  },
  { name: "schema: targetPort ok", spec: { ...dns, ports: [{ ...tlsPort, targetPort: 8443 }] } },
  {
    name: "schema: endpoint port range",
    spec: { ...stat, endpoints: [{ address: "10.0.0.1", ports: { tcp: 0 } }] },
    want: { path: "spec.endpoints[0].ports.tcp", message: "greater or equal to 1" },
  },
  // Hosts
  {
    name: "hosts: empty",
    spec: { ...dns, hosts: [] },
    want: { path: "spec.hosts", message: "at least one host" },
  },
  {
    name: "hosts: * is not allowed",
    spec: { ...dns, hosts: ["*"] },
    want: { path: "spec.hosts[0]", message: '"*" is not allowed' },
  },
  {
    name: "hosts: invalid label",
    spec: { ...dns, hosts: ["foo_bar.example.com"] },
    want: { path: "spec.hosts[0]", message: 'label "foo_bar" invalid' },
  },
  { name: "hosts: wildcard prefix ok", spec: { ...dns, hosts: ["*.example.com"], resolution: "NONE" } },
  {
    name: "hosts: partial wildcard warns",
    spec: { ...dns, hosts: ["*foo.example.com"], resolution: "NONE" },
    want: { path: "spec.hosts[0]", message: "partial wildcard", severity: "warning" },
  },
  // Addresses
  {
    name: "addresses: IP and CIDR ok",
    spec: { ...stat, addresses: ["10.0.0.1", "10.1.0.0/16"], endpoints: [{ address: "10.0.0.2" }] },
  },
  {
    name: "addresses: not an IP",
    spec: { ...dns, addresses: ["10.0.0.300"] },
    want: { path: "spec.addresses[0]", message: "not a valid IP address or CIDR block" },
  },
  {
    name: "addresses: CIDR needs NONE or STATIC",
    spec: { ...dns, addresses: ["10.0.0.0/8"] },
    want: { path: "spec.addresses[0]", message: "CIDR addresses are allowed only for NONE/STATIC" },
  },
  // Ports
  {
    name: "ports: missing warns",
    spec: { hosts: ["api.example.com"], resolution: "DNS" },
    want: { path: "spec", message: "no ports", severity: "warning" },
  },
  {
    name: "ports: duplicate name",
    spec: { ...dns, ports: [tlsPort, { ...tlsPort, number: 8443 }] },
    want: { path: "spec.ports[1].name", message: 'port name "https" is already defined' },
  },
  {
    name: "ports: duplicate number",
    spec: { ...dns, ports: [tlsPort, { ...tlsPort, name: "https-2" }] },
    want: { path: "spec.ports[1].number", message: "port 443 is already defined" },
  },
  {
    name: "ports: name must be a DNS label",
    spec: { ...dns, ports: [{ ...tlsPort, name: "https_1" }] },
    want: { path: "spec.ports[0].name", message: "invalid port name" },
  },
  {
    name: "ports: unknown protocol",
    spec: { ...dns, ports: [{ ...tlsPort, protocol: "FTP" }] },
    want: { path: "spec.ports[0].protocol", message: 'unsupported protocol "FTP"' },
  },
  { name: "ports: protocol is case-insensitive", spec: { ...dns, ports: [{ ...tlsPort, protocol: "tls" }] } },
  { name: "ports: unset protocol ok", spec: { ...dns, ports: [{ number: 443, name: "https" }] } },
  // workloadSelector
  {
    name: "selector: exclusive with endpoints",
    spec: { ...stat, workloadSelector: { labels: { app: "db" } }, endpoints: [{ address: "10.0.0.1" }] },
    want: { path: "spec.workloadSelector", message: "only one of workloadSelector or endpoints" },
  },
  {
    name: "selector: wildcard",
    spec: { ...stat, workloadSelector: { labels: { app: "db*" } } },
    want: { path: "spec.workloadSelector.labels.app", message: "wildcards are not supported" },
  },
  {
    name: "selector: empty key",
    spec: { ...stat, workloadSelector: { labels: { "": "db" } } },
    want: { path: 'spec.workloadSelector.labels[""]', message: "empty label key" },
  },
  {
    name: "selector: no labels warns",
    spec: { ...stat, workloadSelector: {} },
    want: { path: "spec.workloadSelector", message: "no labels", severity: "warning" },
  },
  {
    name: "selector: STATIC with selector ok",
    spec: { ...stat, workloadSelector: { labels: { app: "db" } } },
  },
  // NONE
  {
    name: "NONE: no endpoints",
    spec: { ...stat, resolution: "NONE", endpoints: [{ address: "10.0.0.1" }] },
    want: { path: "spec.endpoints", message: "cannot be set for resolution NONE" },
  },
  {
    name: "NONE: selector warns",
    spec: { ...stat, resolution: "NONE", workloadSelector: { labels: { app: "db" } } },
    want: { path: "spec.workloadSelector", message: "no effect with resolution NONE", severity: "warning" },
  },
  // STATIC
  {
    name: "STATIC: neither endpoints nor selector warns",
    spec: stat,
    want: { path: "spec.resolution", message: "neither endpoints nor workloadSelector", severity: "warning" },
  },
  {
    name: "STATIC: IP endpoints ok",
    spec: { ...stat, endpoints: [{ address: "10.0.0.1" }, { address: "2001:db8::1" }] },
  },
  {
    name: "STATIC: endpoint address must be an IP",
    spec: { ...stat, endpoints: [{ address: "db1.example.com" }] },
    want: { path: "spec.endpoints[0].address", message: "not a valid IP address (resolution STATIC)" },
  },
  {
    name: "STATIC: endpoint needs an address",
    spec: { ...stat, endpoints: [{ labels: { a: "b" } }] },
    want: { path: "spec.endpoints[0]", message: "address is required" },
  },
  {
    name: "STATIC: endpoint with a network and no address warns",
    spec: { ...stat, endpoints: [{ network: "vpc-2" }] },
    want: { path: "spec.endpoints[0]", message: 'network "vpc-2"', severity: "warning" },
  },
  {
    name: "STATIC: endpoint port must be a service port",
    spec: { ...stat, endpoints: [{ address: "10.0.0.1", ports: { http: 8080 } }] },
    want: { path: "spec.endpoints[0].ports.http", message: "not defined by the ServiceEntry's ports" },
  },
  {
    name: "STATIC: endpoint port override ok",
    spec: { ...stat, endpoints: [{ address: "10.0.0.1", ports: { tcp: 15432 } }] },
  },
  {
    name: "STATIC: endpoint labels are validated",
    spec: { ...stat, endpoints: [{ address: "10.0.0.1", labels: { "bad key": "x" } }] },
    want: { path: 'spec.endpoints[0].labels["bad key"]', message: "invalid label key" },
  },
  {
    name: "STATIC: unix endpoint needs exactly one port",
    spec: { ...stat, ports: [httpPort, tlsPort], endpoints: [{ address: "unix:///var/run/sock" }] },
    want: { path: "spec.ports", message: "exactly 1 service port" },
  },
  {
    name: "STATIC: unix endpoint cannot have ports",
    spec: { ...stat, endpoints: [{ address: "unix:///var/run/sock", ports: { tcp: 1 } }] },
    want: { path: "spec.endpoints[0].ports", message: "must not include ports" },
  },
  {
    name: "STATIC: unix endpoint needs an absolute path",
    spec: { ...stat, endpoints: [{ address: "unix://var/run/sock" }] },
    want: { path: "spec.endpoints[0].address", message: "not an absolute path" },
  },
  // DNS
  {
    name: "DNS: hosts must be resolvable without endpoints",
    spec: { ...dns, hosts: ["*.example.com"] },
    want: { path: "spec.hosts[0]", message: "must be resolvable names" },
  },
  {
    name: "DNS: wildcard hosts ok with endpoints",
    spec: { ...dns, hosts: ["*.example.com"], endpoints: [{ address: "lb.example.com" }] },
  },
  {
    name: "DNS: endpoint address must be an FQDN or IP",
    spec: { ...dns, endpoints: [{ address: "lb_1.example.com" }] },
    want: { path: "spec.endpoints[0].address", message: "not a valid FQDN or IP address" },
  },
  {
    name: "DNS: unix endpoint is not resolvable",
    spec: { ...dns, endpoints: [{ address: "unix:///var/run/sock" }] },
    want: { path: "spec.endpoints[0].address", message: "not a valid FQDN or IP address" },
  },
  {
    name: "DNS_ROUND_ROBIN: at most one endpoint",
    spec: {
      ...dns,
      resolution: "DNS_ROUND_ROBIN",
      endpoints: [{ address: "a.example.com" }, { address: "b.example.com" }],
    },
    want: { path: "spec.endpoints", message: "at most 1 endpoint" },
  },
  {
    name: "DNS: addresses with several hosts and a TCP port warns",
    spec: { ...dns, hosts: ["a.example.com", "b.example.com"], addresses: ["10.0.0.1"] },
    want: { path: "spec.hosts", message: "only one host", severity: "warning" },
  },
  // DYNAMIC_DNS
  { name: "DYNAMIC_DNS: ok", spec: dyn },
  {
    name: "DYNAMIC_DNS: hosts must be wildcards",
    spec: { ...dyn, hosts: ["api.example.com"] },
    want: { path: "spec.hosts[0]", message: "must be wildcards" },
  },
  {
    name: "DYNAMIC_DNS: no addresses",
    spec: { ...dyn, addresses: ["10.0.0.1"] },
    want: { path: "spec.addresses", message: "cannot be set for resolution DYNAMIC_DNS" },
  },
  {
    name: "DYNAMIC_DNS: no endpoints",
    spec: { ...dyn, endpoints: [{ address: "10.0.0.1" }] },
    want: { path: "spec.endpoints", message: "cannot be set for resolution DYNAMIC_DNS" },
  },
  {
    name: "DYNAMIC_DNS: HTTP, TLS, GRPC or HTTP2 ports only",
    spec: { ...dyn, ports: [{ number: 5432, name: "tcp", protocol: "TCP" }] },
    want: { path: "spec.ports[0].protocol", message: "only HTTP, TLS, GRPC and HTTP2" },
  },
  {
    name: "DYNAMIC_DNS: MESH_INTERNAL cannot use a waypoint",
    spec: { ...dyn, location: "MESH_INTERNAL" },
    labels: { "istio.io/use-waypoint": "waypoint" },
    want: { path: "spec.location", message: "cannot use a waypoint" },
  },
  { name: "DYNAMIC_DNS: partial wildcard allowed", spec: { ...dyn, hosts: ["*foo.example.com"] } },
  // Several hosts
  {
    name: "several hosts need HTTP or TLS ports",
    spec: { ...stat, hosts: ["a.example.com", "b.example.com"], workloadSelector: { labels: { app: "db" } } },
    want: { path: "spec.ports[0]", message: "multiple hosts need HTTP or TLS ports" },
  },
  {
    name: "several hosts with TCP ok for NONE",
    spec: { ...stat, hosts: ["a.example.com", "b.example.com"], resolution: "NONE" },
  },
  // exportTo
  { name: "exportTo: ~ ok for a ServiceEntry", spec: { ...dns, exportTo: ["~"] } },
  {
    name: "exportTo: duplicate",
    spec: { ...dns, exportTo: ["a", "a"] },
    want: { path: "spec.exportTo[1]", message: 'duplicate entry "a"' },
  },
  {
    name: "exportTo: ~ with others",
    spec: { ...dns, exportTo: ["~", "a"] },
    want: { path: "spec.exportTo", message: "no one (~)" },
  },
  {
    name: "exportTo: invalid namespace",
    spec: { ...dns, exportTo: ["Bad_NS"] },
    want: { path: "spec.exportTo[0]", message: "invalid exportTo entry" },
  },
];

for (const c of cases) {
  Deno.test(`ServiceEntry: ${c.name}`, () => {
    const findings = validateResource(serviceEntry, {
      apiVersion: "networking.mesh.io/v1",
      kind: "ServiceEntry",
      metadata: { name: "se", namespace: "ns", ...(c.labels ? { labels: c.labels } : {}) },
      spec: c.spec,
    });
    assertFindingOrValid(findings, c.want);
  });
}

/** Examples from istio.io's ServiceEntry reference, which Istio accepts. */
const ISTIO_EXAMPLES = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: external-svc-https
spec:
  hosts:
  - api.dropboxapi.com
  - www.googleapis.com
  - api.facebook.com
  location: MESH_EXTERNAL
  ports:
  - number: 443
    name: https
    protocol: TLS
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: external-svc-mongocluster
spec:
  hosts:
  - mymongodb.somedomain # not used
  addresses:
  - 192.192.192.192/24 # VIPs
  ports:
  - number: 27018
    name: mongodb
    protocol: MONGO
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints:
  - address: 2.2.2.2
  - address: 3.3.3.3
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: external-svc-wikipedia
spec:
  hosts:
  - wikipedia.org
  location: MESH_EXTERNAL
  ports:
  - number: 80
    name: example-http
    protocol: HTTP
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: external-svc-dns
spec:
  hosts:
  - foo.bar.com
  location: MESH_EXTERNAL
  ports:
  - number: 80
    name: http
    protocol: HTTP
  resolution: DNS
  endpoints:
  - address: us.foo.bar.com
    ports:
      http: 8080
  - address: uk.foo.bar.com
    ports:
      http: 9080
  - address: in.foo.bar.com
    ports:
      http: 7080
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: unix-domain-socket-example
spec:
  hosts:
  - "example.unix.local"
  location: MESH_EXTERNAL
  ports:
  - number: 80
    name: http
    protocol: HTTP
  resolution: STATIC
  endpoints:
  - address: unix:///var/run/example/socket
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: details-svc
spec:
  hosts:
  - details.bookinfo.com
  location: MESH_INTERNAL
  ports:
  - number: 80
    name: http
    protocol: HTTP
    targetPort: 8080
  resolution: STATIC
  workloadSelector:
    labels:
      app: details-legacy
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: external-svc-wildcard-example
spec:
  hosts:
  - "*.bar.com"
  location: MESH_EXTERNAL
  ports:
  - number: 80
    name: http
    protocol: HTTP
  resolution: NONE
`;

for (const doc of parseAllDocuments(ISTIO_EXAMPLES)) {
  const resource = doc.toJS();
  Deno.test(`ServiceEntry: istio.io example ${resource.metadata.name} is clean`, () => {
    assert.deepEqual(validateResource(serviceEntry, resource).map(show), []);
  });
}
