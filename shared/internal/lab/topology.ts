/**
 * The lab's topology file: namespaces (sidecar injection on or off) and workloads, each with its
 * service account, labels, command, container ports and services. Parsed from YAML and validated
 * in full; every problem is reported as `<file>:<line>: <field path>: <reason>`.
 *
 * @module
 */
import { parseYamlDocuments, type YamlDocument } from "../../mod.ts";
import { InputError } from "./input_error.ts";

/** One port of a service: the service port and the container port it maps to (Kubernetes Service). */
export interface ServicePort {
  /** Port name (ServiceEntry `ports[].name`); default `http-<port>`. */
  name: string;
  /** The service port clients use. */
  port: number;
  /** The container port it reaches; default `port`. */
  targetPort: number;
  /** Kubernetes' `appProtocol` (e.g. `tcp`, `kubernetes.io/h2c`); decides over the name (shared/protocol). */
  appProtocol?: string;
}

/** A service in front of one workload. */
export interface Service {
  name: string;
  ports: ServicePort[];
}

/** A workload: one process tree in its own network namespace, with or without a sidecar. */
export interface Workload {
  name: string;
  namespace: string;
  serviceAccount: string;
  /** Default `{app: <name>}`. */
  labels: Record<string, string>;
  /** argv; `$(VAR)` expands as in a Kubernetes container command (see the lab README); empty for a gateway. */
  command: string[];
  /** The ports the command listens on; for a gateway, the targetPorts its Gateway listeners bind. */
  containerPorts: number[];
  services: Service[];
  /** From the namespace's injection setting; always false for a gateway. */
  sidecar: boolean;
  /**
   * An ingress gateway (topology field `gateway: true`): the mesh's `proxy --type router` runs here
   * instead of a command, as Istio's `istio-ingressgateway` deployment, never with a sidecar.
   */
  gateway: boolean;
}

/** A validated topology. */
export interface Topology {
  namespaces: { name: string; injection: boolean }[];
  workloads: Workload[];
  /** meshd's mesh config (`--meshConfig`), as written; absent: meshd's default mesh. meshd checks it. */
  meshConfig?: Record<string, unknown>;
}

/** Ports the sidecar itself uses in a proxied workload's namespace (admin, outbound). */
export const SIDECAR_PORTS: readonly number[] = [15000, 15001];

/** Ports a gateway's proxy itself uses (admin). */
export const GATEWAY_PORTS: readonly number[] = [15000];

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

type Path = (string | number)[];

/** Collects problems with their lines; each reader returns a value or undefined after reporting. */
class Reader {
  readonly problems: string[] = [];
  constructor(readonly file: string, readonly doc: YamlDocument) {}

  fail(path: Path, reason: string): undefined {
    const field = path.reduce<string>(
      (s, p) => typeof p === "number" ? `${s}[${p}]` : s === "" ? p : `${s}.${p}`,
      "",
    );
    this.problems.push(`${this.file}:${this.doc.lineOf(path)}: ${field || "(document)"}: ${reason}`);
    return undefined;
  }

  object(v: unknown, path: Path, keys: readonly string[]): Record<string, unknown> | undefined {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return this.fail(path, "must be a map");
    const o: Record<string, unknown> = Object.fromEntries(Object.entries(v));
    for (const k of Object.keys(o)) {
      if (!keys.includes(k)) this.fail([...path, k], `unknown field; known: ${keys.join(", ")}`);
    }
    return o;
  }

  array(v: unknown, path: Path): unknown[] | undefined {
    if (!Array.isArray(v)) return this.fail(path, "must be a list");
    return v;
  }

  name(v: unknown, path: Path): string | undefined {
    if (typeof v !== "string" || !DNS_LABEL.test(v)) {
      return this.fail(
        path,
        `must be a DNS label (lower-case letters, digits, "-"); got ${JSON.stringify(v)}`,
      );
    }
    return v;
  }

  port(v: unknown, path: Path): number | undefined {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 65535) {
      return this.fail(path, `must be a port number from 1 to 65535; got ${JSON.stringify(v)}`);
    }
    return v;
  }
}

/**
 * Parses and validates a topology.
 *
 * @param text the YAML text (one document)
 * @param file the file name used in every problem
 * @throws InputError with every problem found
 */
export function parseTopology(text: string, file: string): Topology {
  const docs = parseYamlDocuments(text).filter((d) => d.value !== undefined || d.syntaxErrors.length > 0);
  if (docs.length !== 1) {
    throw new InputError([`${file}: must hold exactly one YAML document; found ${docs.length}`]);
  }
  const doc = docs[0];
  if (doc.syntaxErrors.length > 0) {
    throw new InputError(doc.syntaxErrors.map((e) => `${file}:${e.line}: invalid YAML: ${e.message}`));
  }
  const r = new Reader(file, doc);
  const top = r.object(doc.value, [], ["namespaces", "workloads", "meshConfig"]);
  const meshConfig = meshConfigOf(r, top?.meshConfig);
  const namespaces = new Map<string, boolean>();
  for (const [i, ns] of (r.array(top?.namespaces, ["namespaces"]) ?? []).entries()) {
    const path = ["namespaces", i];
    const o = r.object(ns, path, ["name", "injection"]);
    if (o === undefined) continue;
    const name = r.name(o.name, [...path, "name"]);
    if (o.injection !== "enabled" && o.injection !== "disabled") {
      r.fail([...path, "injection"], `must be enabled or disabled; got ${JSON.stringify(o.injection)}`);
    }
    if (name === undefined) continue;
    if (name === "mesh-system") {
      r.fail([...path, "name"], "mesh-system is the root namespace, where meshd runs");
    }
    if (namespaces.has(name)) r.fail([...path, "name"], `namespace ${name} is listed twice`);
    namespaces.set(name, o.injection === "enabled");
  }
  const workloads: Workload[] = [];
  const seen = new Set<string>();
  const services = new Set<string>();
  for (const [i, w] of (r.array(top?.workloads, ["workloads"]) ?? []).entries()) {
    const workload = readWorkload(r, w, ["workloads", i], namespaces);
    if (workload === undefined) continue;
    const key = `${workload.namespace}/${workload.name}`;
    if (seen.has(key)) r.fail(["workloads", i, "name"], `workload ${key} is listed twice`);
    seen.add(key);
    for (const [j, s] of workload.services.entries()) {
      const skey = `${workload.namespace}/${s.name}`;
      if (services.has(skey)) {
        r.fail(["workloads", i, "services", j, "name"], `service ${skey} is listed twice`);
      }
      services.add(skey);
    }
    workloads.push(workload);
  }
  if (r.problems.length > 0) throw new InputError(r.problems);
  return {
    namespaces: [...namespaces].map(([name, injection]) => ({ name, injection })),
    workloads,
    ...(meshConfig === undefined ? {} : { meshConfig }),
  };
}

/** The topology's meshConfig: any map (meshd checks its fields when it starts). */
function meshConfigOf(r: Reader, v: unknown): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "object" || v === null || Array.isArray(v)) return r.fail(["meshConfig"], "must be a map");
  return Object.fromEntries(Object.entries(v));
}

const WORKLOAD_KEYS = [
  "name",
  "namespace",
  "serviceAccount",
  "labels",
  "command",
  "gateway",
  "containerPorts",
  "services",
] as const;

function readWorkload(
  r: Reader,
  w: unknown,
  path: Path,
  namespaces: Map<string, boolean>,
): Workload | undefined {
  const o = r.object(w, path, WORKLOAD_KEYS);
  if (o === undefined) return undefined;
  const name = r.name(o.name, [...path, "name"]);
  const namespace = r.name(o.namespace, [...path, "namespace"]);
  if (namespace !== undefined && !namespaces.has(namespace)) {
    r.fail([...path, "namespace"], `namespace ${namespace} is not listed under namespaces`);
  }
  const serviceAccount = o.serviceAccount === undefined
    ? "default"
    : r.name(o.serviceAccount, [...path, "serviceAccount"]);
  const labels = o.labels === undefined ? { app: name ?? "" } : readLabels(r, o.labels, [...path, "labels"]);
  if (o.gateway !== undefined && typeof o.gateway !== "boolean") {
    r.fail([...path, "gateway"], `must be true or false; got ${JSON.stringify(o.gateway)}`);
  }
  const gateway = o.gateway === true;
  const command = gateway ? gatewayCommand(r, o.command, path) : r.array(o.command, [...path, "command"]);
  if (command !== undefined && !gateway) {
    if (command.length === 0) r.fail([...path, "command"], "must name a program");
    command.forEach((c, j) => typeof c !== "string" && r.fail([...path, "command", j], "must be a string"));
  }
  const sidecar = !gateway && (namespaces.get(namespace ?? "") ?? false);
  const reserved = gateway ? GATEWAY_PORTS : sidecar ? SIDECAR_PORTS : [];
  const containerPorts: number[] = [];
  for (const [j, p] of (r.array(o.containerPorts ?? [], [...path, "containerPorts"]) ?? []).entries()) {
    const port = r.port(p, [...path, "containerPorts", j]);
    if (port === undefined) continue;
    if (containerPorts.includes(port)) r.fail([...path, "containerPorts", j], `port ${port} is listed twice`);
    if (reserved.includes(port)) {
      r.fail(
        [...path, "containerPorts", j],
        `port ${port} is the ${gateway ? "gateway proxy" : "sidecar"}'s own (${reserved.join(", ")})`,
      );
    }
    containerPorts.push(port);
  }
  const services: Service[] = [];
  for (const [j, s] of (r.array(o.services ?? [], [...path, "services"]) ?? []).entries()) {
    const service = readService(r, s, [...path, "services", j], containerPorts);
    if (service !== undefined) services.push(service);
  }
  if (
    name === undefined || namespace === undefined || serviceAccount === undefined || labels === undefined ||
    command === undefined
  ) return undefined;
  return {
    name,
    namespace,
    serviceAccount,
    labels,
    command: command.filter((c) => typeof c === "string"),
    containerPorts,
    services,
    sidecar,
    gateway,
  };
}

/** A gateway runs the mesh's proxy, so it takes no command of its own. */
function gatewayCommand(r: Reader, command: unknown, path: Path): string[] | undefined {
  if (command === undefined) return [];
  return r.fail([...path, "command"], "a gateway runs the mesh's proxy (--type router); remove the command");
}

function readLabels(r: Reader, v: unknown, path: Path): Record<string, string> | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return r.fail(path, "must be a map");
  const entries: [string, unknown][] = Object.entries(v);
  if (entries.length === 0) {
    return r.fail(path, "needs at least one label: services select by them");
  }
  const labels: Record<string, string> = {};
  let ok = true;
  for (const [k, value] of entries) {
    if (!LABEL_KEY.test(k)) ok = r.fail([...path, k], "not a valid label key") ?? false;
    if (typeof value !== "string" || !LABEL_VALUE.test(value)) {
      ok = r.fail([...path, k], `must be a label value (a string); got ${JSON.stringify(value)}`) ?? false;
    } else labels[k] = value;
  }
  return ok ? labels : undefined;
}

function readService(r: Reader, v: unknown, path: Path, containerPorts: number[]): Service | undefined {
  const o = r.object(v, path, ["name", "ports"]);
  if (o === undefined) return undefined;
  const name = r.name(o.name, [...path, "name"]);
  const ports: ServicePort[] = [];
  const list = r.array(o.ports, [...path, "ports"]);
  if (list !== undefined && list.length === 0) r.fail([...path, "ports"], "needs at least one port");
  for (const [k, p] of (list ?? []).entries()) {
    const at = [...path, "ports", k];
    const po = r.object(p, at, ["name", "port", "targetPort", "appProtocol"]);
    if (po === undefined) continue;
    const port = r.port(po.port, [...at, "port"]);
    const targetPort = po.targetPort === undefined ? port : r.port(po.targetPort, [...at, "targetPort"]);
    const portName = po.name === undefined ? `http-${port}` : r.name(po.name, [...at, "name"]);
    if (port === undefined || targetPort === undefined || portName === undefined) continue;
    if (!containerPorts.includes(targetPort)) {
      r.fail(
        [...at, po.targetPort === undefined ? "port" : "targetPort"],
        `targets port ${targetPort}, which is not among the workload's containerPorts`,
      );
    }
    if (ports.some((q) => q.port === port)) r.fail([...at, "port"], `port ${port} is listed twice`);
    if (po.appProtocol !== undefined && (typeof po.appProtocol !== "string" || po.appProtocol === "")) {
      r.fail([...at, "appProtocol"], `must be a non-empty string; got ${JSON.stringify(po.appProtocol)}`);
    }
    const appProtocol = typeof po.appProtocol === "string" && po.appProtocol !== ""
      ? po.appProtocol
      : undefined;
    ports.push({ name: portName, port, targetPort, ...(appProtocol ? { appProtocol } : {}) });
  }
  return name === undefined ? undefined : { name, ports };
}
