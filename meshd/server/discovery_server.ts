/**
 * The discovery server: istiod's data flow in one place. Config store (--configDir) → validated
 * resources → debounced, immutable push context → per-proxy generators → ADS push over gRPC.
 * Connecting and disconnecting proxies feed back into the push context, because a connected proxy
 * makes its workload "proxied" for automatic mutual TLS (meshd issue, "Service registry"). When and
 * what to push, and whether a push context is derived from the last (connects, disconnects, policy
 * edits) or built whole, is push_scheduler.ts; this file keeps the listeners and the lifecycle.
 *
 * @module
 */
import type { ProxySettings } from "../../shared/proxy_settings/mod.ts";
import * as grpc from "@grpc/grpc-js";
import { type ConfigFeed, ConfigStore } from "../config_store/mod.ts";
import type { JwksFetchMode, ValidationIssue } from "../../shared/mod.ts";
import type { PushContext } from "../push_context/push_context.ts";
import { AdsServer } from "../xds/ads_server.ts";
import { CODEC_CHUNK_BYTES } from "../xds/delta_diff.ts";
import type { AdsHooks, AdsServerOptions, AdsStreamStatus } from "../xds/ads_types.ts";
import { type GeneratorCacheOptions, workloadKeyOf } from "../xds/generators.ts";
import { ROUTER_PREFIX } from "../xds/memo_keys.ts";
import { type AutoRegistrationHooks, AutoRegistry } from "../registry/auto_registration.ts";
import { JwksResolver, type JwksResolverOptions } from "../jwks/resolver.ts";
import type { OfKind } from "../push_context/push_context.ts";
import type { ServiceRegistry } from "../push_context/registry_services.ts";
import { DebugPages } from "./debug_pages.ts";
import { debugResponder, type DebugXdsOptions } from "./debug_xds.ts";
import { BridgeServer, type ServiceRegistrar } from "./serving/bridge.ts";
import { type ChildStatus, ServingPool } from "./serving/pool.ts";
import { CodecServer } from "./grpc_codec/codec_server.ts";
import { type ChildServerOptions, grpcServerOptions } from "./serving/wire.ts";
import { bind, listenAddress, withPort } from "./grpc_listen.ts";
import { type PushContextHow, PushScheduler } from "./push_scheduler.ts";

export { PROXIED_GRACE_MS, type PushContextHow } from "./push_scheduler.ts";

/** Where the server logs; matches meshd/logging's scope loggers. */
export interface DiscoveryLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of {@link DiscoveryServer}. */
export interface DiscoveryServerOptions {
  /** Directory of config YAML (--configDir); ignored when `configFeed` is given. */
  configDir: string;
  /** Another config source instead of the directory: the Kubernetes API (meshd/kube_source). */
  configFeed?: ConfigFeed;
  /** A service registry (meshd/kube_registry): started and stopped with the server, its changes pushed. */
  registry?: ServiceRegistry;
  /** Plain-text ADS address (--grpcAddr), `host:port` or `:port`; port 0 picks a free one. */
  grpcAddr: string;
  /** Root namespace (meshConfig rootNamespace); default mesh-system. */
  rootNamespace?: string;
  /** Trust domain; default cluster.local. */
  trustDomain?: string;
  /** The mesh config's data-path settings for every proxy; default shared's DEFAULT_PROXY_SETTINGS. */
  proxySettings?: ProxySettings;
  /** DISCO_SCOPE_GATEWAY_TO_NAMESPACE: a gateway workload is selected only by Gateways of its namespace. */
  scopeGatewayToNamespace?: boolean;
  /** DISCO_DEBOUNCE_AFTER in ms; default 100. */
  debounceAfterMs?: number;
  /** DISCO_DEBOUNCE_MAX in ms; default 10000. */
  debounceMaxMs?: number;
  /** MESH_GPRC_MAXSTREAMS; default 100000. */
  maxStreams?: number;
  /** MESH_GPRC_MAXRECVMSGSIZE in bytes; default 4 MiB. */
  maxRecvMessageBytes?: number;
  /** --keepaliveInterval and --keepaliveTimeout in ms; defaults 30 s and 10 s. */
  keepaliveIntervalMs?: number;
  keepaliveTimeoutMs?: number;
  /** --keepaliveMaxServerConnectionAge in ms: connections are closed gracefully after it. */
  maxConnectionAgeMs?: number;
  /** Logs; default none. */
  logger?: DiscoveryLogger;
  /** Each rejected config document (disco_total_rejected_configs). */
  onRejected?(issue: ValidationIssue): void;
  /**
   * A push context was made: how long it took, why (disco_push_triggers), and how
   * ({@link PushContextHow}).
   */
  onPushContext?(ctx: PushContext, buildMs: number, reasons: Map<string, number>, how: PushContextHow): void;
  /** ADS observers (metrics); called besides the server's own bookkeeping. */
  adsHooks?: AdsHooks;
  /** DISCO_PUSH_THROTTLE; default 1000 (ads_types.ts). */
  pushThrottle?: number;
  /** DISCO_ENABLE_XDS_CACHE and the settings beside it; default: the cache on, 60,000 entries. */
  xdsCache?: GeneratorCacheOptions;
  /**
   * The mutual-TLS listener (--secureGRPCAddr): ADS plus whatever `register` adds (the CA service).
   * Absent: plain text only.
   */
  secure?: {
    addr: string;
    /** meshd's certificate and the client roots; updates take effect for new connections. */
    certificates: grpc.experimental.CertificateProvider;
    register?(server: ServiceRegistrar): void;
  };
  /**
   * Serving children (serving/README.md): N > 0 serves gRPC from N supervised child processes behind
   * a byte relay, so that Deno's abort on a client's GOAWAY (denoland/deno#36788) takes down only a
   * child; 0 or absent serves in this process (tests, which do not need it).
   */
  servingChildren?: number;
  /**
   * How the gRPC ports are served (--grpcTransport): "codec" (the default) in this process on the
   * project's own HTTP/2 codec (grpc_codec/README.md); "children" with `servingChildren` children, or
   * with grpc-js in this process when `servingChildren` is 0.
   */
  grpcTransport?: "codec" | "children";
  /**
   * How long a workload stays proxied after its last stream left, ms; default {@link PROXIED_GRACE_MS}.
   * A proxy whose connection broke (a serving child died, a network blip) reconnects within it, and
   * its clients never see it flip to plain text and back (which STRICT servers would refuse).
   */
  proxiedGraceMs?: number;
  /** A serving child died (and was replaced): its pid, how, and the calls it took. */
  onChildDeath?(pid: number, how: string, calls: number): void;
  /**
   * Debug over xDS (debug_xds.ts): who may read which page; the root namespace defaults to
   * `rootNamespace`. Absent: debug requests are refused as authentication required, as by Istio
   * without authenticators.
   */
  debug?: Omit<DebugXdsOptions, "rootNamespace">;
  /** The public trust bundle (PEM), the `rootCert` debug page; absent without a CA. */
  rootCertPem?: () => string;
  /** XDS_AUTH: see {@link AdsServerOptions.authorize}. */
  authorize?: AdsServerOptions["authorize"];
  /**
   * DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION and DISCO_WORKLOAD_ENTRY_GRACE_PERIOD; absent means
   * disabled.
   */
  autoRegistration?: { gracePeriodMs: number; hooks?: AutoRegistrationHooks };
  /**
   * The JWKS resolver (DISCO_JWT_PUB_KEY_REFRESH_INTERVAL, JWKS_RESOLVER_INSECURE_SKIP_VERIFY, fetch
   * observer); default: refresh every 20 minutes, certificates verified. A changed key set
   * triggers a push (reason `jwks`).
   */
  jwks?: Omit<JwksResolverOptions, "onChange">;
  /**
   * DISCO_JWT_ENABLE_REMOTE_JWKS: who fetches each rule's keys (shared's jwksFetcherOf); meshd's
   * resolver tracks only the sources meshd fetches. Default `meshd`.
   */
  jwksFetchMode?: JwksFetchMode;
}

/** Options of {@link DiscoveryServer.stop}. */
export interface StopOptions {
  /**
   * The process ends right after: close the listeners and leave the open connections and their
   * streams to the kernel (FIN or RST). Neither a GOAWAY, which can abort a Deno peer inside nghttp2
   * (denoland/deno#36788), nor ending the streams first, after which a proxy closes its channel, with
   * a GOAWAY of its own (measured: idle proxies died 4 times in 30 restarts of 6 that way). Default
   * false: streams ended, then GOAWAY, as in-process callers need every session closed.
   */
  exiting?: boolean;
}

/** How the gRPC ports are served (see `grpcTransport`). */
function transportOf(o: DiscoveryServerOptions): "codec" | "children" {
  return o.grpcTransport ?? (o.servingChildren ? "children" : "codec");
}

function configFrom(o: DiscoveryServerOptions): string {
  return o.configFeed?.description ?? o.configDir;
}

/** The running discovery server. */
export class DiscoveryServer {
  readonly #options: DiscoveryServerOptions;
  readonly #store: ConfigStore;
  readonly #pushes: PushScheduler;
  readonly #ads: AdsServer;
  readonly #auto: AutoRegistry | undefined;
  /** Stream id to the auto-registered entry it holds. */
  readonly #autoKeys = new Map<string, string>();
  readonly #jwks: JwksResolver;
  readonly #pages: DebugPages;
  #grpc: grpc.Server | undefined;
  #secureGrpc: grpc.Server | undefined;
  #pool: ServingPool | undefined;
  #codec: CodecServer | undefined;
  /** The bound addresses with their real ports, for unbind. */
  readonly #bound = new Map<grpc.Server, string>();
  #unsubscribe: (() => void) | undefined;

  /** @param options addresses, config directory, timings and observers */
  constructor(options: DiscoveryServerOptions) {
    this.#options = options;
    this.#store = new ConfigStore(options.configFeed ?? options.configDir, {
      rootNamespace: options.rootNamespace,
      onRejected: options.onRejected,
      logger: options.logger,
    });
    this.#auto = options.autoRegistration
      ? new AutoRegistry({
        gracePeriodMs: options.autoRegistration.gracePeriodMs,
        hooks: options.autoRegistration.hooks,
        groups: () => this.#workloadGroups(),
        onChange: () => this.#pushes.trigger("autoregistration"),
      })
      : undefined;
    this.#jwks = new JwksResolver({
      refreshIntervalMs: 20 * 60_000,
      insecureSkipVerify: false,
      ...options.jwks,
      onChange: () => this.#pushes.trigger("jwks"),
    });
    this.#pushes = new PushScheduler(options, {
      store: this.#store,
      jwks: this.#jwks,
      auto: this.#auto,
      push: (changedAt, only) => this.#ads.push(changedAt, only),
      busy: () => this.#ads.queued > 0,
    });
    const hooks = options.adsHooks ?? {};
    this.#pages = new DebugPages(this, { rootCertPem: options.rootCertPem });
    this.#ads = new AdsServer(this.#pushes.generator, {
      ...hooks,
      // The codec keeps no per-stream buffer at a stream's largest write, as node:http2 does.
      ...(transportOf(options) === "codec" ? { responseBytes: CODEC_CHUNK_BYTES } : {}),
      pushThrottle: options.pushThrottle,
      authorize: options.authorize,
      debug: debugResponder(this.#pages, {
        xdsAuth: true,
        authPlaintext: false,
        ...options.debug,
        rootNamespace: options.rootNamespace ?? "mesh-system",
      }),
      onConnect: (s) => {
        this.#proxyChanged(s, +1);
        hooks.onConnect?.(s);
      },
      onDisconnect: (s) => {
        this.#proxyChanged(s, -1);
        hooks.onDisconnect?.(s);
      },
    });
  }

  /** The ADS server, for debug endpoints and metrics. */
  get ads(): AdsServer {
    return this.#ads;
  }

  /** The debug pages, served over HTTP (--httpAddr) and over xDS alike. */
  get debugPages(): DebugPages {
    return this.#pages;
  }

  /** The config store, for /debug/configz. */
  get store(): ConfigStore {
    return this.#store;
  }

  /** The current push context, for /debug/registryz. */
  get pushContext(): PushContext {
    return this.#pushes.generator.context;
  }

  /**
   * Loads the config directory, builds the first push context and starts serving ADS.
   *
   * @returns the bound gRPC ports (securePort 0 when there is no secure listener)
   * @throws when the config directory is missing or an address cannot be bound
   */
  async start(): Promise<{ grpcPort: number; securePort: number }> {
    await this.#store.start();
    this.#unsubscribe = this.#store.onChange((change) => this.#pushes.configChanged(change));
    await this.#options.registry?.start(() => this.#pushes.trigger("registry"));
    this.#pushes.rebuild();
    const o = this.#options;
    const limits: ChildServerOptions = {
      maxStreams: o.maxStreams ?? 100_000,
      maxRecvMessageBytes: o.maxRecvMessageBytes ?? 4 * 1024 * 1024,
      keepaliveIntervalMs: o.keepaliveIntervalMs ?? 30_000,
      keepaliveTimeoutMs: o.keepaliveTimeoutMs ?? 10_000,
      // The default (Go's max duration) means never; timers cannot take more than 2^31-1 ms.
      ...(o.maxConnectionAgeMs !== undefined && o.maxConnectionAgeMs < 2 ** 31 - 1
        ? { maxConnectionAgeMs: o.maxConnectionAgeMs }
        : {}),
    };
    const transport = transportOf(o);
    if (transport === "codec") return await this.#startServing(limits, undefined);
    if (o.servingChildren) return await this.#startServing(limits, o.servingChildren);
    const serverOptions = grpcServerOptions(limits);
    this.#grpc = new grpc.Server(serverOptions);
    this.#ads.register(this.#grpc);
    const grpcPort = await bind(
      this.#grpc,
      o.grpcAddr,
      grpc.ServerCredentials.createInsecure(),
      "--grpcAddr",
    );
    this.#bound.set(this.#grpc, withPort(o.grpcAddr, grpcPort));
    o.logger?.info(`ADS listening on ${o.grpcAddr} (port ${grpcPort}), config from ${configFrom(o)}`);
    let securePort = 0;
    if (o.secure) {
      this.#secureGrpc = new grpc.Server(serverOptions);
      this.#ads.register(this.#secureGrpc, "tls");
      o.secure.register?.(this.#secureGrpc);
      const credentials = grpc.experimental.createCertificateProviderServerCredentials(
        o.secure.certificates,
        o.secure.certificates,
        false,
      );
      securePort = await bind(this.#secureGrpc, o.secure.addr, credentials, "--secureGRPCAddr");
      this.#bound.set(this.#secureGrpc, withPort(o.secure.addr, securePort));
      o.logger?.info(`ADS and CA listening with mutual TLS on ${o.secure.addr} (port ${securePort})`);
    }
    return { grpcPort, securePort };
  }

  /** The serving children, for debug pages; empty when serving in this process. */
  get servingChildren(): ChildStatus[] {
    return this.#pool?.status() ?? [];
  }

  /** Serving children that died since the start (each replaced); 0 when serving in this process. */
  get servingChildDeaths(): number {
    return this.#pool?.deaths ?? 0;
  }

  /** The codec server (grpc_codec/) or the serving children (serving/), bound; the ports and a log line. */
  async #startServing(
    serverOptions: ChildServerOptions,
    children: number | undefined,
  ): Promise<{ grpcPort: number; securePort: number }> {
    const o = this.#options;
    const common = {
      listen: {
        plaintext: listenAddress(o.grpcAddr),
        ...(o.secure ? { tls: listenAddress(o.secure.addr) } : {}),
      },
      servers: this.#bridgeServers(),
      serverOptions,
      certificates: o.secure?.certificates,
      logger: o.logger,
    };
    const server = children === undefined
      ? (this.#codec = new CodecServer(common))
      : (this.#pool = new ServingPool({ ...common, children, onChildDeath: o.onChildDeath }));
    let ports;
    try {
      ports = await server.start();
    } catch (e) {
      await server.stop(0);
      throw new Error(
        `--grpcAddr ${o.grpcAddr} / --secureGRPCAddr ${o.secure?.addr}: ${(e as Error).message}`,
      );
    }
    const served = children === undefined ? "own HTTP/2 codec" : `served by ${children} child processes`;
    o.logger?.info(
      `ADS listening on ${o.grpcAddr} (port ${ports.plaintext}), config from ${configFrom(o)}; ${served}`,
    );
    if (o.secure) {
      o.logger?.info(
        `ADS and CA listening with mutual TLS on ${o.secure.addr} (port ${ports.tls}); ${served}`,
      );
    }
    return { grpcPort: ports.plaintext, securePort: ports.tls };
  }

  /** The services of each listener, for the codec server and the serving children. */
  #bridgeServers(): { plaintext: BridgeServer; tls: BridgeServer } {
    const servers = { plaintext: new BridgeServer(), tls: new BridgeServer() };
    this.#ads.register(servers.plaintext);
    if (this.#options.secure) {
      this.#ads.register(servers.tls, "tls");
      this.#options.secure.register?.(servers.tls);
    }
    return servers;
  }

  /**
   * Stops. With serving children: stops accepting, waits up to `graceMs` (--shutdownDuration) for
   * CSRs in flight, then ends the children without a GOAWAY or a stream end (serving/README.md).
   * In process: ends every ADS stream (status OK) so proxies reconnect elsewhere, then waits up to
   * `graceMs` for calls to finish before forcing; with `exiting`, only closes the listeners (see
   * {@link StopOptions}). Never writes to the config directory.
   */
  async stop(graceMs = 10_000, options: StopOptions = {}): Promise<void> {
    this.#auto?.stop();
    this.#jwks.stop();
    this.#pushes.stop();
    this.#unsubscribe?.();
    await this.#options.registry?.stop();
    const servers = [this.#grpc, this.#secureGrpc].filter((s): s is grpc.Server => s !== undefined);
    if (this.#pool || this.#codec) {
      await (this.#pool ?? this.#codec)!.stop(graceMs);
    } else if (options.exiting) {
      for (const s of servers) s.unbind(this.#bound.get(s)!);
    } else {
      this.#ads.closeAll();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all(servers.map((s) => new Promise<void>((resolve) => s.tryShutdown(() => resolve())))),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
      ]);
      clearTimeout(timer);
      for (const s of servers) s.forceShutdown();
    }
    // After the streams ended: each end starts a proxied-grace timer (#proxyChanged).
    this.#pushes.clearGraceTimers();
    await this.#store.stop();
  }

  #workloadGroups(): Map<string, OfKind<"WorkloadGroup">> {
    const groups = new Map<string, OfKind<"WorkloadGroup">>();
    for (const r of this.#store.snapshot().resources) {
      if (r.kind === "WorkloadGroup") groups.set(`${r.namespace}/${r.name}`, r);
    }
    return groups;
  }

  #proxyChanged(s: AdsStreamStatus, delta: number): void {
    if (this.#auto && delta > 0) {
      const { key: autoKey, reason } = this.#auto.connect(s.node);
      if (autoKey) this.#autoKeys.set(s.id, autoKey);
      if (reason) this.#options.logger?.warn(reason);
    } else if (this.#auto && delta < 0) {
      const autoKey = this.#autoKeys.get(s.id);
      this.#autoKeys.delete(s.id);
      if (autoKey) this.#auto.disconnect(autoKey);
    }
    const key = workloadKeyOf(s.node);
    if (key === undefined) return;
    // A gateway (router) takes plain text from clients: its workload is not a mutual-TLS endpoint.
    if (s.node.id.startsWith(ROUTER_PREFIX)) return;
    this.#pushes.proxyChanged(key, delta);
  }
}
