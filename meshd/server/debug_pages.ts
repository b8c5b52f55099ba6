/**
 * meshd's debug pages, one implementation for both ways of reading them: the debug HTTP interface
 * (--httpAddr, `/debug/<name>`) and debug requests over xDS (type URL `istio.io/debug/<name>`,
 * Istio's pilot/pkg/xds/debuggen.go and statusgen.go). Pages: syncz, configz, registryz,
 * connections, config_dump?proxyID=, mesh, version, servingz (meshd's serving child processes), and
 * rootCert when meshd runs a CA.
 *
 * A page can be limited to the proxies of one namespace (`namespace`): Istio's
 * ENABLE_DEBUG_ENDPOINT_AUTH lets a caller outside the system namespace see only its own proxies.
 *
 * @module
 */
import { buildInfo, decodeResource, redactSecret, RESOURCE_TYPES, typeUrlOf } from "../../shared/mod.ts";
import type { ConfigStore } from "../config_store/mod.ts";
import type { PushContext } from "../push_context/push_context.ts";
import type { ChildStatus } from "./serving/pool.ts";
import type { AdsStreamStatus } from "../xds/ads_types.ts";
import { PushContextGenerator, workloadKeyOf } from "../xds/generators.ts";

/** One rendered page: an HTTP status (200 or an error), a content type, and the body text. */
export interface DebugPage {
  status: number;
  contentType: string;
  body: string;
}

/** Which page, for whom. */
export interface DebugPageRequest {
  /** The page name without `/debug/`, e.g. `syncz`; empty for the index. */
  name: string;
  /** The query, e.g. `proxyID=foo/httpbin-1` for config_dump. */
  query: URLSearchParams;
  /** Only proxies whose workload is in this namespace; absent: every proxy. */
  namespace?: string;
}

/** Options of {@link DebugPages}. */
export interface DebugPagesOptions {
  /** The public trust bundle (PEM), served as `rootCert` when meshd runs a CA. */
  rootCertPem?: () => string;
}

/** Pages that only list or dump proxies, and so can be limited to one namespace's proxies. */
export const PROXY_PAGES: ReadonlySet<string> = new Set(["syncz", "config_dump"]);

const TYPE_NAMES = new Map(Object.values(RESOURCE_TYPES).map((t) => [typeUrlOf(t), t]));

const jsonPage = (body: unknown, status = 200): DebugPage => ({
  status,
  contentType: "application/json",
  body: JSON.stringify(body, null, 2) + "\n",
});

/** Whether a stream is the proxy `id` names: its connection id, node id, or `<namespace>/<name>`. */
function streamMatches(s: AdsStreamStatus, id: string): boolean {
  return s.id === id || s.node.id === id || workloadKeyOf(s.node) === id;
}

function inNamespace(s: AdsStreamStatus, namespace: string | undefined): boolean {
  return namespace === undefined || (workloadKeyOf(s.node) ?? "").split("/")[0] === namespace;
}

/**
 * What the debug pages read from the running discovery server (DiscoveryServer provides it): the pages
 * depend on this view, not on the server, so the server can own its pages without an import circle.
 */
export interface DebugSource {
  /** The push context in force. */
  readonly pushContext: PushContext;
  /** The config store (configz). */
  readonly store: Pick<ConfigStore, "snapshot">;
  /** The ADS streams (syncz, connections, config_dump). */
  readonly ads: { streams(): AdsStreamStatus[] };
  /** meshd's serving child processes (servingz). */
  readonly servingChildren: ChildStatus[];
  /** How many serving children died (servingz). */
  readonly servingChildDeaths: number;
}

/** The debug pages of a running discovery server. */
export class DebugPages {
  readonly #discovery: DebugSource;
  readonly #pages: Record<string, (r: DebugPageRequest) => DebugPage>;

  /** @param discovery the running server; @param options what else meshd has to show (its CA) */
  constructor(discovery: DebugSource, options: DebugPagesOptions = {}) {
    this.#discovery = discovery;
    const rootCert = options.rootCertPem;
    this.#pages = {
      syncz: (r) => jsonPage(this.#syncz(r.namespace)),
      configz: () => jsonPage(this.#configz()),
      registryz: () => jsonPage(this.#registryz()),
      connections: () => jsonPage(this.#connections()),
      // meshd's own page (serving/README.md): the child processes that serve gRPC.
      servingz: () =>
        jsonPage({
          children: discovery.servingChildren.map((c) => ({
            ...c,
            startedAt: new Date(c.startedAt).toISOString(),
          })),
          deaths: discovery.servingChildDeaths,
        }),
      config_dump: (r) => this.#configDump(r.query.get("proxyID"), r.namespace),
      mesh: () =>
        jsonPage({
          rootNamespace: discovery.pushContext.rootNamespace,
          trustDomain: discovery.pushContext.trustDomain,
          // What meshctl's authz explain normalizes request paths with, as the proxies do.
          pathNormalization: discovery.pushContext.proxySettings.pathNormalization,
        }),
      version: () => jsonPage({ component: "meshd", ...buildInfo() }),
      ...(rootCert
        ? {
          // The public trust bundle, for `meshctl x workload entry configure` (root-cert.pem).
          rootCert: () => ({ status: 200, contentType: "application/x-pem-file", body: rootCert() }),
        }
        : {}),
    };
  }

  /** The page names, without `/debug/`. */
  get names(): string[] {
    return Object.keys(this.#pages);
  }

  /** Whether `name` is a page. */
  has(name: string): boolean {
    return Object.hasOwn(this.#pages, name);
  }

  /**
   * Renders a page. Unknown names give 404 with the list of pages; a bad config_dump request gives
   * 400 or 404 with the reason in the JSON `error` field.
   */
  render(request: DebugPageRequest): DebugPage {
    if (request.name === "") return jsonPage(this.names);
    const page = this.has(request.name) ? this.#pages[request.name] : undefined;
    if (!page) {
      return jsonPage({
        error: `no debug page ${JSON.stringify(request.name)}; pages: ${this.names.join(", ")}`,
      }, 404);
    }
    return page(request);
  }

  /** Per proxy and type: last sent and last acknowledged version and nonce (Istio's syncz). */
  #syncz(namespace: string | undefined): unknown {
    return this.#discovery.ads.streams().filter((s) => inNamespace(s, namespace)).map((s) => ({
      proxy: s.node.id,
      workload: workloadKeyOf(s.node) ?? "",
      connection: s.id,
      protocol: s.protocol,
      types: s.types,
    }));
  }

  #configz(): unknown {
    const snap = this.#discovery.store.snapshot();
    // Secrets keep their certificates but never show private keys.
    return {
      revision: snap.revision,
      resources: snap.resources.map((e) =>
        e.kind === "Secret" ? { ...e, resource: redactSecret(e.resource) } : e
      ),
    };
  }

  #registryz(): unknown {
    const ctx = this.#discovery.pushContext;
    return {
      version: ctx.version,
      builtAt: new Date(ctx.builtAt).toISOString(),
      services: ctx.services,
      workloads: [...ctx.workloads.values()],
      // The Kubernetes registry's own view (cluster ID, namespaces, service accounts, counts).
      ...(ctx.registry ? { registry: ctx.registry } : {}),
    };
  }

  #connections(): unknown {
    return this.#discovery.ads.streams().map((s) => ({
      connection: s.id,
      proxy: s.node.id,
      // `<namespace>/<name>` and the node metadata: how meshctl finds a proxy and its admin port.
      workload: workloadKeyOf(s.node) ?? "",
      metadata: s.node.metadata,
      peer: s.peer,
      protocol: s.protocol,
      connectedAt: new Date(s.connectedAt).toISOString(),
      types: s.types.map((t) => t.typeUrl),
    }));
  }

  /**
   * What meshd would send one proxy now (Istio's `/debug/config_dump?proxyID=`): per subscribed type,
   * the list version and each resource decoded. `proxy-status <proxy>` diffs it against the proxy's
   * own /config_dump.
   */
  #configDump(id: string | null, namespace: string | undefined): DebugPage {
    if (!id) return jsonPage({ error: "proxyID is required, e.g. config_dump?proxyID=foo/httpbin-1" }, 400);
    const stream = this.#discovery.ads.streams().find((s) =>
      streamMatches(s, id) && inNamespace(s, namespace)
    );
    if (!stream) {
      const where = namespace === undefined ? "" : ` in namespace ${namespace}`;
      return jsonPage({ error: `proxy ${JSON.stringify(id)} is not connected${where}; see syncz` }, 404);
    }
    const generator = new PushContextGenerator(this.#discovery.pushContext);
    return jsonPage({
      proxy: stream.node.id,
      connection: stream.id,
      types: stream.types.map((t) => {
        const list = generator.generate(stream.node, t.typeUrl);
        const type = TYPE_NAMES.get(t.typeUrl);
        return {
          typeUrl: t.typeUrl,
          // The version a push now would carry (system_version_info), and the list's own hash.
          version: generator.version(),
          listVersion: list?.version ?? "",
          resources: (list?.resources ?? []).map((r) => ({
            name: r.name,
            version: r.version,
            value: type ? redacted(type, decodeResource(type, r.body)) : null,
          })),
        };
      }),
    });
  }
}

/** A decoded resource for display: a TlsCredential's private key is never shown. */
function redacted(type: string, value: Record<string, unknown>): Record<string, unknown> {
  if (type !== RESOURCE_TYPES.tlsCredential || !value.privateKey) return value;
  return { ...value, privateKey: "[redacted]" };
}
