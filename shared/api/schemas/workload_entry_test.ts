import assert from "node:assert/strict";
import { assertFindingOrValid } from "./_test_support.ts";
import { parseAllDocuments } from "yaml";
import { type Finding, formatFieldPath, type Severity } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { workloadEntry } from "./workload_entry.ts";

/** One rule exercised: the spec, and the finding it must produce (none: it must produce no error). */
interface Case {
  name: string;
  spec: Record<string, unknown>;
  want?: { path: string; message: string; severity?: Severity };
}

const show = (f: Finding): string => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`;

const cases: Case[] = [
  // Schema
  {
    name: "schema: unknown field",
    spec: { address: "10.0.0.1", port: 80 },
    want: { path: "spec.port", message: "unknown field" },
  },
  {
    name: "schema: port value above 65535",
    spec: { address: "10.0.0.1", ports: { http: 65536 } },
    want: { path: "spec.ports.http", message: "less or equal to 65535" },
  },
  {
    name: "schema: port value 0",
    spec: { address: "10.0.0.1", ports: { http: 0 } },
    want: { path: "spec.ports.http", message: "greater or equal to 1" },
  },
  {
    name: "schema: negative weight",
    spec: { address: "10.0.0.1", weight: -1 },
    want: { path: "spec.weight", message: "greater or equal to 0" },
  },
  { name: "schema: weight ok", spec: { address: "10.0.0.1", weight: 10 } },
  {
    name: "schema: weight must be an integer",
    spec: { address: "10.0.0.1", weight: 1.5 },
    want: { path: "spec.weight", message: "expected an integer" },
  },
  // Address
  {
    name: "address: required",
    spec: { labels: { app: "x" } },
    want: { path: "spec", message: "address is required" },
  },
  {
    name: "address: unset with a network warns",
    spec: { network: "vpc-1" },
    want: { path: "spec", message: "address is unset", severity: "warning" },
  },
  { name: "address: IPv4 ok", spec: { address: "10.0.0.1" } },
  { name: "address: IPv6 ok", spec: { address: "2001:db8::1" } },
  { name: "address: DNS name ok", spec: { address: "vm1.vpc01.corp.net" } },
  {
    name: "address: invalid DNS name",
    spec: { address: "vm_1.corp.net" },
    want: { path: "spec.address", message: "not a valid FQDN or IP address" },
  },
  { name: "address: unix socket ok", spec: { address: "unix:///var/run/app.sock" } },
  {
    name: "address: unix socket path must be absolute",
    spec: { address: "unix://run/app.sock" },
    want: { path: "spec.address", message: "not an absolute path" },
  },
  {
    name: "address: unix socket cannot have ports",
    spec: { address: "unix:///var/run/app.sock", ports: { http: 8080 } },
    want: { path: "spec.ports", message: "must not include ports" },
  },
  // Ports and labels
  { name: "ports: ok", spec: { address: "10.0.0.1", ports: { http: 8080, "grpc-api": 9090 } } },
  {
    name: "ports: name must be a DNS label",
    spec: { address: "10.0.0.1", ports: { http_api: 8080 } },
    want: { path: "spec.ports.http_api", message: "invalid port name" },
  },
  {
    name: "labels: invalid value",
    spec: { address: "10.0.0.1", labels: { app: "my app" } },
    want: { path: "spec.labels.app", message: "invalid label value" },
  },
  {
    name: "labels: invalid key",
    spec: { address: "10.0.0.1", labels: { "a/b/c": "x" } },
    want: { path: 'spec.labels["a/b/c"]', message: "invalid label key" },
  },
  {
    name: "labels: prefixed key ok",
    spec: { address: "10.0.0.1", labels: { "app.kubernetes.io/name": "reviews" } },
  },
];

for (const c of cases) {
  Deno.test(`WorkloadEntry: ${c.name}`, () => {
    const findings = validateResource(workloadEntry, {
      apiVersion: "networking.mesh.io/v1",
      kind: "WorkloadEntry",
      metadata: { name: "we", namespace: "ns" },
      spec: c.spec,
    });
    assertFindingOrValid(findings, c.want);
  });
}

/** Examples from istio.io's WorkloadEntry reference, which Istio accepts. */
const ISTIO_EXAMPLES = `
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: details-svc
spec:
  # use of the service account indicates that the workload has a
  # sidecar proxy bootstrapped with this service account. Pods with
  # sidecars will automatically communicate with the workload using
  # istio mutual TLS.
  serviceAccount: details-legacy
  address: 2.2.2.2
  labels:
    app: details-legacy
    instance-id: vm1
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: details-svc-dns
spec:
  serviceAccount: details-legacy
  address: vm1.vpc01.corp.net
  labels:
    app: details-legacy
    instance-id: vm1
`;

for (const doc of parseAllDocuments(ISTIO_EXAMPLES)) {
  const resource = doc.toJS();
  Deno.test(`WorkloadEntry: istio.io example ${resource.metadata.name} is clean`, () => {
    assert.deepEqual(validateResource(workloadEntry, resource).map(show), []);
  });
}
