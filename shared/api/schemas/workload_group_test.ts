import assert from "node:assert/strict";
import { assertFindingOrValid } from "./_test_support.ts";
import { parseAllDocuments } from "yaml";
import { type Finding, formatFieldPath, type Severity } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { workloadGroup } from "./workload_group.ts";

/** One rule exercised: the spec, and the finding it must produce (none: it must produce no error). */
interface Case {
  name: string;
  spec: Record<string, unknown>;
  want?: { path: string; message: string; severity?: Severity };
}

const show = (f: Finding): string => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`;

const template = { serviceAccount: "default", ports: { http: 8080 } };
const withProbe = (probe: Record<string, unknown>): Record<string, unknown> => ({ template, probe });

const cases: Case[] = [
  // Schema
  {
    name: "schema: template is required",
    spec: { metadata: {} },
    want: { path: "spec.template", message: "required" },
  },
  {
    name: "schema: unknown template field",
    spec: { template: { ...template, image: "x" } },
    want: { path: "spec.template.image", message: "unknown field" },
  },
  {
    name: "schema: template port range",
    spec: { template: { ports: { http: 70000 } } },
    want: { path: "spec.template.ports.http", message: "less or equal to 65535" },
  },
  {
    name: "schema: negative probe period",
    spec: withProbe({ periodSeconds: -1, tcpSocket: { port: 80 } }),
    want: { path: "spec.probe.periodSeconds", message: "greater or equal to 0" },
  },
  {
    name: "schema: httpGet needs a port",
    spec: withProbe({ httpGet: { path: "/ready" } }),
    want: { path: "spec.probe.httpGet.port", message: "required" },
  },
  {
    name: "schema: probe port range",
    spec: withProbe({ tcpSocket: { port: 0 } }),
    want: { path: "spec.probe.tcpSocket.port", message: "greater or equal to 1" },
  },
  {
    name: "schema: exec command entries not empty",
    spec: withProbe({ exec: { command: [""] } }),
    want: { path: "spec.probe.exec.command[0]", message: "length greater or equal to 1" },
  },
  // Metadata and template
  {
    name: "metadata: labels ok",
    spec: { metadata: { labels: { app: "reviews", version: "1.3.4" } }, template },
  },
  {
    name: "metadata: invalid label",
    spec: { metadata: { labels: { app: "re views" } }, template },
    want: { path: "spec.metadata.labels.app", message: "invalid label value" },
  },
  {
    name: "template: address warns",
    spec: { template: { ...template, address: "10.0.0.1" } },
    want: { path: "spec.template.address", message: "should not be set in a template", severity: "warning" },
  },
  {
    name: "template: labels warn",
    spec: { template: { ...template, labels: { app: "x" } } },
    want: { path: "spec.template.labels", message: "spec.metadata.labels", severity: "warning" },
  },
  {
    name: "template: port name must be a DNS label",
    spec: { template: { ports: { HTTP_PORT: 8080 } } },
    want: { path: "spec.template.ports.HTTP_PORT", message: "invalid port name" },
  },
  {
    name: "template: unix address with ports",
    spec: { template: { address: "unix:///sock", ports: { http: 8080 } } },
    want: { path: "spec.template.ports", message: "unix socket address may not have ports" },
  },
  // Probe
  { name: "probe: tcpSocket ok", spec: withProbe({ tcpSocket: { port: 8080 } }) },
  { name: "probe: exec ok", spec: withProbe({ exec: { command: ["cat", "/tmp/ready"] } }) },
  { name: "probe: grpc ok", spec: withProbe({ grpc: { port: 9090, service: "health" } }) },
  {
    name: "probe: needs a method",
    spec: withProbe({ periodSeconds: 5 }),
    want: { path: "spec.probe", message: "needs one of httpGet, tcpSocket, exec, grpc" },
  },
  {
    name: "probe: only one method",
    spec: withProbe({ tcpSocket: { port: 8080 }, exec: { command: ["true"] } }),
    want: { path: "spec.probe", message: "only one of httpGet, tcpSocket, exec, grpc" },
  },
  {
    name: "probe: httpGet scheme",
    spec: withProbe({ httpGet: { port: 8080, scheme: "https" } }),
    want: { path: "spec.probe.httpGet.scheme", message: "HTTP or HTTPS" },
  },
  {
    name: "probe: httpGet header name",
    spec: withProbe({ httpGet: { port: 8080, httpHeaders: [{ name: "X_Foo", value: "1" }] } }),
    want: { path: "spec.probe.httpGet.httpHeaders[0].name", message: "not a valid header name" },
  },
  {
    name: "probe: httpGet header name required",
    spec: withProbe({ httpGet: { port: 8080, httpHeaders: [{ value: "1" }] } }),
    want: { path: "spec.probe.httpGet.httpHeaders[0]", message: "header name must not be empty" },
  },
  {
    name: "probe: exec command not empty",
    spec: withProbe({ exec: { command: [] } }),
    want: { path: "spec.probe.exec.command", message: "must not be empty" },
  },
  {
    name: "probe: grpc needs a port",
    spec: withProbe({ grpc: { service: "health" } }),
    want: { path: "spec.probe.grpc", message: "port is required" },
  },
];

for (const c of cases) {
  Deno.test(`WorkloadGroup: ${c.name}`, () => {
    const findings = validateResource(workloadGroup, {
      apiVersion: "networking.mesh.io/v1",
      kind: "WorkloadGroup",
      metadata: { name: "wg", namespace: "ns" },
      spec: c.spec,
    });
    assertFindingOrValid(findings, c.want);
  });
}

/** The example from istio.io's WorkloadGroup reference, which Istio accepts. */
const ISTIO_EXAMPLES = `
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: reviews
  namespace: bookinfo
spec:
  metadata:
    labels:
      app.kubernetes.io/name: reviews
      app.kubernetes.io/version: "1.3.4"
  template:
    ports:
      grpc: 3550
      http: 8080
    serviceAccount: default
  probe:
    initialDelaySeconds: 5
    timeoutSeconds: 3
    periodSeconds: 4
    successThreshold: 3
    failureThreshold: 3
    httpGet:
     path: /foo/bar
     host: 127.0.0.1
     port: 3100
     scheme: HTTPS
     httpHeaders:
     - name: Lit-Header
       value: Im-The-Best
`;

for (const doc of parseAllDocuments(ISTIO_EXAMPLES)) {
  const resource = doc.toJS();
  Deno.test(`WorkloadGroup: istio.io example ${resource.metadata.name} is clean`, () => {
    assert.deepEqual(validateResource(workloadGroup, resource).map(show), []);
  });
}
