/**
 * The discovery server: istiod's data flow in one place. Config store (--configDir) → validated
 * resources → debounced, immutable push context → per-proxy generators → ADS push over gRPC.
 * Connecting and disconnecting proxies feed back into the push context, because a connected proxy
 * makes its workload "proxied" for automatic mutual TLS (meshd issue, "Service registry").
 *
 * @module
 */
import type { ProxySettings } from "../../shared/proxy_settings/mod.ts";
import * as grpc from "@grpc/grpc-js";
import { ConfigStore } from "../config_store/mod.ts";
import { jwksFetcherOf, type JwksFetchMode, type ValidationIssue } from "../../shared/mod.ts";
import { Debouncer } from "../push_context/debounce.ts";
import { buildPushContext, type PushContext } from "../push_context/push_context.ts";
import { type AdsHooks, AdsServer, type AdsServerOptions, type AdsStreamStatus } from "../xds/ads_server.ts";
import { PushContextGenerator, workloadKeyOf } from "../xds/generators.ts";
import { type AutoRegistrationHooks, AutoRegistry } from "../registry/auto_registration.ts";
import { JwksResolver, type JwksResolverOptions, type JwksRule } from "../jwks/resolver.ts";
import type { ConfigResource } from "../push_context/push_context.ts";
import { DebugPages } from "./debug_pages.ts";
import { debugResponder, type DebugXdsOptions } from "./debug_xds.ts";

/** Where the server logs; matches meshd/logging's scope loggers. */
export interface DiscoveryLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of {@link DiscoveryServer}. */
export interface DiscoveryServerOptions {
  /** Directory of config YAML (--configDir). */
  configDir: string;
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
  /** A push context was built: how long it took, and why (disco_push_triggers, disco_pushcontext_init_seconds). */
  onPushContext?(ctx: PushContext, buildMs: number, reasons: Map<string, number>): void;
  /** ADS observers (metrics); called besides the server's own bookkeeping. */
  adsHooks?: AdsHooks;
  /** DISCO_PUSH_THROTTLE; default 100. */
  pushThrottle?: number;
  /**
   * The mutual-TLS listener (--secureGRPCAddr): ADS plus whatever `register` adds (the CA service).
   * Absent: plain text only.
   */
  secure?: {
    addr: string;
    credentials: grpc.ServerCredentials;
    register?(server: grpc.Server): void;
  };
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

/** Parses `host:port`, `:port` or `[v6]:port` into what grpc-js binds. */
export function grpcBindAddress(addr: string): string {
  if (addr.startsWith(":")) return `0.0.0.0${addr}`;
  return addr;
}

/** `addr` as grpc-js knows it once bound, with the real port (for unbind: port 0 cannot be unbound). */
function withPort(addr: string, port: number): string {
  return grpcBindAddress(addr).replace(/:\d+$/, `:${port}`);
}

function bind(
  server: grpc.Server,
  addr: string,
  credentials: grpc.ServerCredentials,
  flag: string,
): Promise<number> {
  return new Promise<number>((resolve, reject) =>
    server.bindAsync(
      grpcBindAddress(addr),
      credentials,
      (e, port) => (e ? reject(new Error(`${flag} ${addr}: ${e.message}`)) : resolve(port)),
    )
  );
}

/** The running discovery server. */
export class DiscoveryServer {
  readonly #options: DiscoveryServerOptions;
  readonly #store: ConfigStore;
  readonly #generator: PushContextGenerator;
  readonly #ads: AdsServer;
  readonly #debouncer: Debouncer;
  readonly #connected = new Map<string, number>();
  readonly #auto: AutoRegistry | undefined;
  /** Stream id to the auto-registered entry it holds. */
  readonly #autoKeys = new Map<string, string>();
  readonly #jwks: JwksResolver;
  readonly #pages: DebugPages;
  #grpc: grpc.Server | undefined;
  #secureGrpc: grpc.Server | undefined;
  /** The bound addresses with their real ports, for unbind. */
  readonly #bound = new Map<grpc.Server, string>();
  #builds = 0;
  #unsubscribe: (() => void) | undefined;

  /** @param options addresses, config directory, timings and observers */
  constructor(options: DiscoveryServerOptions) {
    this.#options = options;
    this.#store = new ConfigStore(options.configDir, {
      rootNamespace: options.rootNamespace,
      onRejected: options.onRejected,
      logger: options.logger,
    });
    this.#auto = options.autoRegistration
      ? new AutoRegistry({
        gracePeriodMs: options.autoRegistration.gracePeriodMs,
        hooks: options.autoRegistration.hooks,
        groups: () => this.#workloadGroups(),
        onChange: () => this.#debouncer.trigger("autoregistration"),
      })
      : undefined;
    this.#jwks = new JwksResolver({
      refreshIntervalMs: 20 * 60_000,
      insecureSkipVerify: false,
      ...options.jwks,
      onChange: () => this.#debouncer.trigger("jwks"),
    });
    this.#generator = new PushContextGenerator(this.#build());
    const hooks = options.adsHooks ?? {};
    this.#pages = new DebugPages(this, { rootCertPem: options.rootCertPem });
    this.#ads = new AdsServer(this.#generator, {
      ...hooks,
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
    this.#debouncer = new Debouncer((reasons, firstAt) => this.#push(reasons, firstAt), {
      afterMs: options.debounceAfterMs ?? 100,
      maxMs: options.debounceMaxMs ?? 10_000,
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
    return this.#generator.context;
  }

  /**
   * Loads the config directory, builds the first push context and starts serving ADS.
   *
   * @returns the bound gRPC ports (securePort 0 when there is no secure listener)
   * @throws when the config directory is missing or an address cannot be bound
   */
  async start(): Promise<{ grpcPort: number; securePort: number }> {
    await this.#store.start();
    this.#unsubscribe = this.#store.onChange(() => this.#debouncer.trigger("config"));
    this.#generator.update(this.#build());
    this.#syncJwks(this.#generator.context);
    const o = this.#options;
    const serverOptions = {
      "grpc.max_concurrent_streams": o.maxStreams ?? 100_000,
      "grpc.max_receive_message_length": o.maxRecvMessageBytes ?? 4 * 1024 * 1024,
      "grpc.keepalive_time_ms": o.keepaliveIntervalMs ?? 30_000,
      "grpc.keepalive_timeout_ms": o.keepaliveTimeoutMs ?? 10_000,
      // The default (Go's max duration) means never; timers cannot take more than 2^31-1 ms.
      ...(o.maxConnectionAgeMs !== undefined && o.maxConnectionAgeMs < 2 ** 31 - 1
        ? { "grpc.max_connection_age_ms": o.maxConnectionAgeMs }
        : {}),
    };
    this.#grpc = new grpc.Server(serverOptions);
    this.#ads.register(this.#grpc);
    const grpcPort = await bind(
      this.#grpc,
      o.grpcAddr,
      grpc.ServerCredentials.createInsecure(),
      "--grpcAddr",
    );
    this.#bound.set(this.#grpc, withPort(o.grpcAddr, grpcPort));
    o.logger?.info(`ADS listening on ${o.grpcAddr} (port ${grpcPort}), config from ${o.configDir}`);
    let securePort = 0;
    if (o.secure) {
      this.#secureGrpc = new grpc.Server(serverOptions);
      this.#ads.register(this.#secureGrpc, "tls");
      o.secure.register?.(this.#secureGrpc);
      securePort = await bind(this.#secureGrpc, o.secure.addr, o.secure.credentials, "--secureGRPCAddr");
      this.#bound.set(this.#secureGrpc, withPort(o.secure.addr, securePort));
      o.logger?.info(`ADS and CA listening with mutual TLS on ${o.secure.addr} (port ${securePort})`);
    }
    return { grpcPort, securePort };
  }

  /**
   * Stops: ends every ADS stream (status OK) so proxies reconnect elsewhere, then waits up to
   * `graceMs` (--shutdownDuration) for calls to finish before forcing; with `exiting`, only closes the
   * listeners (see {@link StopOptions}). Never writes to the config directory.
   */
  async stop(graceMs = 10_000, options: StopOptions = {}): Promise<void> {
    this.#auto?.stop();
    this.#jwks.stop();
    this.#debouncer.stop();
    this.#unsubscribe?.();
    const servers = [this.#grpc, this.#secureGrpc].filter((s): s is grpc.Server => s !== undefined);
    if (options.exiting) {
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
    await this.#store.stop();
  }

  #workloadGroups(): Map<string, ConfigResource> {
    const groups = new Map<string, ConfigResource>();
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
    if (s.node.id.startsWith("router~")) return;
    const n = (this.#connected.get(key) ?? 0) + delta;
    if (n > 0) this.#connected.set(key, n);
    else this.#connected.delete(key);
    // Only the first stream of a workload and the last one to leave change its proxied flag.
    if ((delta > 0 && n === 1) || (delta < 0 && n === 0)) this.#debouncer.trigger("proxy");
  }

  #build(): PushContext {
    const snapshot = this.#store.snapshot();
    const resources = this.#auto ? [...snapshot.resources, ...this.#auto.entries()] : snapshot.resources;
    return buildPushContext(resources, {
      version: `${snapshot.revision}.${++this.#builds}`,
      rootNamespace: this.#options.rootNamespace,
      trustDomain: this.#options.trustDomain,
      proxySettings: this.#options.proxySettings,
      scopeGatewayToNamespace: this.#options.scopeGatewayToNamespace,
      connected: new Set(this.#connected.keys()),
      jwks: this.#jwks.keys(),
      jwksFetchMode: this.#options.jwksFetchMode,
      jwksRefreshIntervalMs: this.#options.jwks?.refreshIntervalMs,
    });
  }

  /** Makes the JWKS resolver track the key sources that meshd fetches for the context's rules. */
  #syncJwks(ctx: PushContext): void {
    const options = { mode: ctx.jwksFetchMode, services: ctx.services };
    this.#jwks.sync(
      ctx.requestAuthentications
        .flatMap((p) => (p.spec.jwtRules ?? []) as JwksRule[])
        .filter((r) => jwksFetcherOf(r, options) === "meshd"),
    );
  }

  #push(reasons: Map<string, number>, changedAt: number): void {
    const started = performance.now();
    const ctx = this.#build();
    this.#generator.update(ctx);
    this.#syncJwks(ctx);
    this.#options.onPushContext?.(ctx, performance.now() - started, reasons);
    this.#ads.push(changedAt);
  }
}
