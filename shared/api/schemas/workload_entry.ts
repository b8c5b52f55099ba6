/**
 * WorkloadEntry (networking.mesh.io/v1): a workload that is not a Kubernetes pod (a VM, a bare-metal
 * host) with its address, labels and ports, so that services select it like a pod. Fields are
 * Istio's networking/v1 WorkloadEntry (istio.io/latest/docs/reference/config/networking/workload-entry);
 * rules are Istio's ValidateWorkloadEntry plus the CRD's validations.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import { closed, ResourceEnvelope } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import {
  asObject,
  asString,
  checkLabels,
  checkPortName,
  entriesOf,
  fqdnProblem,
  unixAddressProblem,
} from "./networking_rules.ts";
import { isIp } from "./ip.ts";
import { checkProxyConfigAnnotation } from "./proxy_config_rules.ts";

/** The prefix of a Unix domain socket address. */
export const UNIX_ADDRESS_PREFIX = "unix://";

/**
 * The WorkloadEntry spec. Also the shape of ServiceEntry `endpoints` and of WorkloadGroup
 * `template`, as in Istio.
 */
export const WorkloadEntrySpec = Type.Object({
  address: Type.Optional(Type.String({
    maxLength: 256,
    description: "IP address or DNS name of the workload, without port, or unix:///path for a Unix socket",
  })),
  ports: Type.Optional(Type.Record(Type.String(), Type.Integer({ minimum: 1, maximum: 65535 }), {
    description:
      "Service port name to the port the workload listens on, when it differs from the service port",
  })),
  labels: Type.Optional(Type.Record(Type.String(), Type.String(), {
    description: "Labels of the workload, matched by service and policy selectors",
  })),
  network: Type.Optional(Type.String({
    maxLength: 2048,
    description: "L3 network of the workload; endpoints on another network are reached through its gateway",
  })),
  locality: Type.Optional(Type.String({
    maxLength: 2048,
    description: "region/zone/subzone of the workload, for locality-aware load balancing",
  })),
  weight: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 4294967295,
    description: "Load balancing weight; entries with higher weight get proportionally more traffic",
  })),
  serviceAccount: Type.Optional(Type.String({
    maxLength: 253,
    description: "Service account of the workload (in the entry's namespace), giving its mTLS identity",
  })),
}, {
  ...closed,
  title: "WorkloadEntrySpec",
  description: "A workload outside Kubernetes, such as a VM: its address, ports, labels and identity",
});

/** How the address of a workload entry or endpoint may be written. */
export type AddressForm =
  /** A WorkloadEntry: IP, DNS name or Unix socket. */
  | "any"
  /** A STATIC ServiceEntry's endpoint: IP or Unix socket. */
  | "static"
  /** A DNS ServiceEntry's endpoint: IP or DNS name. */
  | "dns";

/** Options of {@link checkWorkloadEntry}. */
export interface WorkloadEntryCheckOptions {
  /** Accepted address forms. */
  address: AddressForm;
  /** The ServiceEntry's port names, which an endpoint's `ports` keys must be among. */
  servicePorts?: ReadonlySet<string>;
}

/**
 * Istio's validateWorkloadEntry: an address is required unless a network is set, and must be an
 * IP, a DNS name or a Unix socket (with no ports); port names are DNS labels and, for a
 * ServiceEntry endpoint, name one of its ports; labels are valid.
 */
export function checkWorkloadEntry(spec: unknown, at: FieldPath, opts: WorkloadEntryCheckOptions): Finding[] {
  const we = asObject(spec);
  if (!we) return [];
  const out: Finding[] = [];
  const address = asString(we.address) ?? "";
  const network = asString(we.network) ?? "";
  if (address === "") {
    if (network === "") {
      return [error(at, "address is required (or a network, for a workload behind its gateway)")];
    }
    out.push(
      warning(at, `address is unset; the workload is reached through the gateway of network "${network}"`),
    );
  }
  if (address.startsWith(UNIX_ADDRESS_PREFIX)) {
    if (opts.address === "dns") {
      out.push(error([...at, "address"], `endpoint address "${address}" is not a valid FQDN or IP address`));
    } else {
      const problem = unixAddressProblem(address.slice(UNIX_ADDRESS_PREFIX.length));
      if (problem) out.push(error([...at, "address"], problem));
      if (entriesOf(we.ports).length > 0) {
        out.push(error([...at, "ports"], `unix endpoint ${address} must not include ports`));
      }
    }
  } else if (address !== "" && !isIp(address)) {
    if (opts.address === "static") {
      out.push(
        error(
          [...at, "address"],
          `endpoint address "${address}" is not a valid IP address (resolution STATIC)`,
        ),
      );
    } else if (fqdnProblem(address) !== undefined) {
      out.push(error([...at, "address"], `address "${address}" is not a valid FQDN or IP address`));
    }
  }
  for (const [name] of entriesOf(we.ports)) {
    if (opts.servicePorts && !opts.servicePorts.has(name)) {
      out.push(
        error([...at, "ports", name], `endpoint port "${name}" is not defined by the ServiceEntry's ports`),
      );
    }
    out.push(...checkPortName(name, [...at, "ports", name]));
  }
  out.push(...checkLabels(we.labels, [...at, "labels"]));
  return out;
}

/** WorkloadEntry: schema and Istio's rules. */
export const workloadEntry = defineKind({
  kind: "WorkloadEntry",
  group: "networking",
  plural: "workloadentries",
  schema: ResourceEnvelope(
    "WorkloadEntry",
    WorkloadEntrySpec,
    "A single non-Kubernetes workload, such as a VM, registered in the mesh like a pod",
  ),
  rules(we): Finding[] {
    return [
      ...checkWorkloadEntry(asObject(we)?.spec, ["spec"], { address: "any" }),
      ...checkProxyConfigAnnotation(asObject(asObject(we)?.metadata)?.annotations, [
        "metadata",
        "annotations",
      ]),
    ];
  },
});
