/**
 * The injection template users can override, in the shape of Istio's `istio-sidecar-injector`
 * ConfigMap: two keys, `config` (YAML: `policy`) and `values` (JSON or YAML: `global.*`, as Helm
 * values). meshd reads them from a directory holding the files `config` and `values` (the ConfigMap
 * mounted as a volume, as istiod reads `/var/lib/istio/inject`), or from one YAML file that is the
 * ConfigMap itself (`kind: ConfigMap`, `data.config`, `data.values`). Either may be absent: every
 * value has a default. Istio's Go `templates` are not supported: a `config` with `templates` or
 * `template` is refused with that reason, so nobody believes theirs applied.
 *
 * Values read (Istio's names): `global.hub`, `global.tag`, `global.proxy.image` (a full reference
 * when it holds `/` or `:`), `global.imagePullPolicy`, `global.proxy.resources`,
 * `global.proxy.includeIPRanges` and `global.proxy.excludeIPRanges` (comma lists of CIDRs, `*` for
 * every destination), `global.proxy.privileged`; and the mesh's own `global.proxy.discoveryAddress`
 * (meshd's --secureGRPCAddr as pods reach it) and `global.proxy.uid` (the proxy's user, excluded
 * from redirection; Istio's 1337); `sidecarInjectorWebhook.rewriteAppHTTPProbe` (default true: the
 * app prober rewrite of probe_rewrite.ts, which a pod's annotation may override).
 *
 * @module
 */
import { parse } from "yaml";
import { isObject, type JsonObject } from "./json.ts";
import type { InjectionPolicy } from "./injection_policy.ts";

/** The template's settings, defaults applied. */
export interface InjectionTemplate {
  policy: InjectionPolicy;
  /** The proxy's (and the init container's) image. */
  image: string;
  imagePullPolicy: string;
  /** meshd's mutual-TLS ADS and CA address as pods reach it. */
  discoveryAddress: string;
  /** CIDRs redirected to the sidecar; empty means every destination (`*`). */
  includeIPRanges: string[];
  /** CIDRs never redirected. */
  excludeIPRanges: string[];
  /** The proxy's user and group id; its own connections are not redirected. */
  proxyUid: number;
  privileged: boolean;
  /** The proxy container's `resources`, as given. */
  resources: JsonObject | undefined;
  /** Istio's `sidecarInjectorWebhook.rewriteAppHTTPProbe`: rewrite app probes unless the pod says no. */
  rewriteAppProbes: boolean;
}

/**
 * meshd's Service name for `revision` (empty, undefined or `default`: `meshd`; else `meshd-<revision>`,
 * as Istio's `istiod-<revision>`): pods of a revision reach their own control plane.
 */
export function meshdServiceName(revision?: string): string {
  return revision && revision !== "default" ? `meshd-${revision}` : "meshd";
}

/** The defaults, for meshd of `revision` in namespace `namespace`. */
export function defaultTemplate(namespace: string, revision?: string): InjectionTemplate {
  return {
    policy: "enabled",
    image: "mesh/proxy:latest",
    imagePullPolicy: "IfNotPresent",
    discoveryAddress: `${meshdServiceName(revision)}.${namespace}.svc:15012`,
    includeIPRanges: [],
    excludeIPRanges: [],
    proxyUid: 1337,
    privileged: false,
    resources: undefined,
    rewriteAppProbes: true,
  };
}

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$|^[0-9a-fA-F:]+:[0-9a-fA-F:]*\/\d{1,3}$/;

function fail(source: string, field: string, reason: string): never {
  throw new Error(`${source}: ${field}: ${reason}`);
}

function at(o: JsonObject, path: string[]): unknown {
  let v: unknown = o;
  for (const p of path) v = isObject(v) ? v[p] : undefined;
  return v;
}

function str(o: JsonObject, path: string[], source: string): string | undefined {
  const v = at(o, path);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || v === "") fail(source, path.join("."), "must be a non-empty string");
  return v;
}

function ranges(o: JsonObject, path: string[], source: string): string[] | undefined {
  const v = str(o, path, source);
  if (v === undefined) return undefined;
  return cidrList(
    v,
    (r) => fail(source, path.join("."), `${JSON.stringify(r)} is not a CIDR (e.g. 10.96.0.0/12) or *`),
  );
}

/**
 * A comma list of CIDRs (`*`: every address, returned as the empty list), as istio-iptables takes it.
 *
 * @param invalid called with the first entry that is not a CIDR; must throw
 */
export function cidrList(text: string, invalid: (entry: string) => never): string[] {
  const list = text.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (list.includes("*")) return [];
  for (const r of list) {
    const m = CIDR.exec(r);
    if (
      !m || (m[1] !== undefined && [m[1], m[2], m[3], m[4]].some((n) => Number(n) > 255)) || Number(m[5]) > 32
    ) {
      invalid(r);
    }
  }
  return list;
}

function parseText(text: string, source: string, field: string): JsonObject {
  let v: unknown;
  try {
    v = parse(text);
  } catch (e) {
    fail(source, field, `not YAML or JSON: ${(e as Error).message.split("\n")[0]}`);
  }
  if (v === null || v === undefined) return {};
  if (!isObject(v)) fail(source, field, "must be a map");
  return v;
}

/**
 * The template from the `config` and `values` texts (either may be undefined).
 *
 * @param source names the file in errors
 * @throws Error `<source>: <field>: <reason>` for a bad value, an unsupported Go template, or YAML that does not parse
 */
export function parseTemplate(
  texts: { config?: string; values?: string },
  source: string,
  namespace: string,
  revision?: string,
): InjectionTemplate {
  const t = defaultTemplate(namespace, revision);
  const config = texts.config === undefined ? {} : parseText(texts.config, source, "config");
  const values = texts.values === undefined ? {} : parseText(texts.values, source, "values");
  for (const key of ["templates", "template", "injectedAnnotations"]) {
    if (config[key] !== undefined) {
      fail(
        source,
        `config.${key}`,
        "is not supported: meshd builds the sidecar from values, not Go templates",
      );
    }
  }
  const policy = config.policy;
  if (policy !== undefined) {
    if (policy !== "enabled" && policy !== "disabled") {
      fail(source, "config.policy", "must be enabled or disabled");
    }
    t.policy = policy;
  }
  const hub = str(values, ["global", "hub"], source);
  const tag = str(values, ["global", "tag"], source);
  const image = str(values, ["global", "proxy", "image"], source);
  if (image?.includes("/") || image?.includes(":")) t.image = image;
  else if (hub || tag || image) t.image = `${hub ?? "mesh"}/${image ?? "proxy"}:${tag ?? "latest"}`;
  t.imagePullPolicy = str(values, ["global", "imagePullPolicy"], source) ?? t.imagePullPolicy;
  t.discoveryAddress = str(values, ["global", "proxy", "discoveryAddress"], source) ?? t.discoveryAddress;
  t.includeIPRanges = ranges(values, ["global", "proxy", "includeIPRanges"], source) ?? t.includeIPRanges;
  t.excludeIPRanges = ranges(values, ["global", "proxy", "excludeIPRanges"], source) ?? t.excludeIPRanges;
  const uid = at(values, ["global", "proxy", "uid"]);
  if (uid !== undefined) {
    if (typeof uid !== "number" || !Number.isInteger(uid) || uid < 1 || uid > 2 ** 31 - 1) {
      fail(source, "global.proxy.uid", "must be a positive integer (the proxy must not run as root)");
    }
    t.proxyUid = uid;
  }
  const privileged = at(values, ["global", "proxy", "privileged"]);
  if (privileged !== undefined) {
    if (typeof privileged !== "boolean") fail(source, "global.proxy.privileged", "must be true or false");
    t.privileged = privileged;
  }
  const rewrite = at(values, ["sidecarInjectorWebhook", "rewriteAppHTTPProbe"]);
  if (rewrite !== undefined) {
    if (typeof rewrite !== "boolean") {
      fail(source, "sidecarInjectorWebhook.rewriteAppHTTPProbe", "must be true or false");
    }
    t.rewriteAppProbes = rewrite;
  }
  const resources = at(values, ["global", "proxy", "resources"]);
  if (resources !== undefined) {
    if (!isObject(resources)) fail(source, "global.proxy.resources", "must be a map (requests, limits)");
    t.resources = resources;
  }
  return t;
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`${path}: cannot read: ${(e as Error).message}`);
  }
}

/**
 * Reads the template from `path`: a directory with `config` and/or `values` files, or a ConfigMap
 * YAML file. A path that does not exist gives the defaults.
 *
 * @throws Error naming the file and field (see {@link parseTemplate})
 */
export async function loadTemplate(
  path: string,
  namespace: string,
  revision?: string,
): Promise<InjectionTemplate> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return defaultTemplate(namespace, revision);
    throw new Error(`${path}: cannot read: ${(e as Error).message}`);
  }
  if (info.isDirectory) {
    const dir = path.replace(/\/$/, "");
    return parseTemplate(
      { config: await readOptional(`${dir}/config`), values: await readOptional(`${dir}/values`) },
      dir,
      namespace,
      revision,
    );
  }
  const doc = parseText(await Deno.readTextFile(path), path, "(file)");
  if (doc.kind !== "ConfigMap") {
    fail(path, "kind", "must be ConfigMap (Istio's istio-sidecar-injector shape)");
  }
  const data = isObject(doc.data) ? doc.data : {};
  const text = (k: string): string | undefined => {
    const v = data[k];
    if (v !== undefined && typeof v !== "string") fail(path, `data.${k}`, "must be a string");
    return v;
  };
  return parseTemplate({ config: text("config"), values: text("values") }, path, namespace, revision);
}
