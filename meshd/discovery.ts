/**
 * `meshd discovery` (meshd seed, "What the service does"): the config store on --configDir, the
 * push context and ADS on --grpcAddr (plain) and --secureGRPCAddr (mutual TLS, with the CA
 * service; both also answer debug requests over xDS), metrics on --monitoringAddr, the debug
 * interface on --httpAddr, ctrlz. The gRPC ports are served in this process on the project's own
 * HTTP/2 codec (--grpcTransport codec, server/grpc_codec/README.md), or by --servingChildren child
 * processes that can die and be replaced (server/serving/README.md, denoland/deno#36788); shutdown stops
 * accepting, waits up to --shutdownDuration for certificate requests in flight, and exits without a
 * GOAWAY to proxies; the injection and validation webhooks on --httpsAddr (webhooks/, with the CA).
 * Config comes from --configDir, else from the Kubernetes API (--kubeconfig or in-cluster, when
 * --registries names Orchestrator; meshd/kube_source), with the service registry (meshd/kube_registry) and
 * the controllers that write to the API (meshd/kube_control.ts).
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import { startRootRotation, startServingCertificate } from "./ca/maintenance.ts";
import { CertificateAuthority } from "./ca/mod.ts";
import { StaticCertificateProvider } from "./ca/server_credentials.ts";
import type { Logger } from "./logging/mod.ts";
import { serveCtrlz } from "./monitoring/ctrlz.ts";
import { type DebugHandlers, serveDebug, serveMonitoring } from "./monitoring/http_servers.ts";
import { discoveryObservers } from "./monitoring/instrument.ts";
import { createMetrics, recordCaExpiry, xdsCacheMetrics } from "./monitoring/metrics.ts";
import type { DiscoveryOptions } from "./options/discovery_flags.ts";
import type { ListenAddress } from "../shared/internal/cli/go_values.ts";
import { ENV_VARS_IN_EFFECT, type MeshdEnvironment } from "./options/environment.ts";
import { loadMeshConfig } from "./options/mesh_config.ts";
import type { PushContext } from "./push_context/push_context.ts";
import { FreshWarnings } from "./push_context/fresh_warnings.ts";
import { DiscoveryServer } from "./server/discovery_server.ts";
import { xdsAuthorizer } from "./server/xds_auth.ts";
import { meshdDnsNames, type RunningWebhooks, startWebhooks } from "./webhooks/mod.ts";
import { parseJwksFetchMode } from "../shared/mod.ts";
import { meshL4RuleWarnings } from "../shared/routing/mod.ts";
import { keptAfterFailure } from "../shared/internal/jwks/refresher.ts";
import { kubeConfigSource, startKubeControl } from "./kube_control.ts";
import { caSource } from "./ca_source.ts";

/** `host:port` text of a listen address; an empty host is every address. */
export function addressText(a: ListenAddress): string {
  const host = a.host === "" ? "0.0.0.0" : a.host;
  return `${host.includes(":") ? `[${host}]` : host}:${a.port}`;
}

/** The options as `key=value` fields, addresses and lists as text, the log levels that are not info. */
function optionFields(options: DiscoveryOptions): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (key === "log") continue;
    if (typeof value === "object" && value !== null && "port" in value) {
      fields[key] = addressText(value as ListenAddress);
    } else if (Array.isArray(value)) fields[key] = value.join(",");
    else fields[key] = value;
  }
  const levels = Object.entries(options.log.outputLevels).filter(([, level]) => level !== "info");
  fields.log_output_level = levels.map(([scope, level]) => `${scope}:${level}`).join(",");
  fields.log_as_json = options.log.asJson;
  fields.log_target = options.log.targets.join(",");
  return fields;
}

/**
 * The certificate provider of the mutual-TLS listener: --tlsCertFile/--tlsKeyFile when given (a certificate from
 * another issuer, read once), else one the mesh CA issues for meshd's service names and renews
 * (ca/serving_cert.ts); client certificates are verified against --caCertFile when given, else the
 * live mesh trust bundle. Client certificates are requested but optional, because a proxy's first
 * CSR carries only its bootstrap token. `stops` gets what ends the renewal.
 */
async function secureCredentials(
  options: DiscoveryOptions,
  revision: string | undefined,
  ca: CertificateAuthority,
  log: Parameters<typeof startServingCertificate>[2],
  stops: (() => Promise<void>)[],
): Promise<grpc.experimental.CertificateProvider> {
  const caCertPem = options.caCertFile ? await readFlagFile("--caCertFile", options.caCertFile) : undefined;
  if (!options.tlsCertFile) {
    const serving = await startServingCertificate(ca, {
      dnsNames: [...meshdDnsNames(options.namespace, options.domain, revision), "localhost"],
      ipAddresses: ["127.0.0.1"],
      trustBundlePem: caCertPem,
    }, log);
    stops.unshift(() => Promise.resolve(serving.stop())); // before the CA stops
    // A provider that follows every renewal: the serving children (server/serving) take its updates.
    const provider = new StaticCertificateProvider(serving.renewer.material);
    serving.renewer.onUpdate((material) => provider.update(material));
    return provider;
  }
  return new StaticCertificateProvider({
    certChainPem: await readFlagFile("--tlsCertFile", options.tlsCertFile),
    privateKeyPem: await readFlagFile("--tlsKeyFile", options.tlsKeyFile),
    trustBundlePem: caCertPem ?? ca.trustBundlePem,
  });
}

async function readFlagFile(flag: string, path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    throw new Error(`${flag} ${path}: cannot read: ${(e as Error).message}`);
  }
}

/** What a running discovery service exposes to its caller (tests, and the signal handler). */
export interface RunningDiscovery {
  /** Bound ports, useful when a flag asked for port 0. */
  ports: { grpc: number; secureGrpc: number; monitoring: number; http: number; ctrlz: number; https: number };
  /** Stops everything, ADS without a GOAWAY (the process must exit next); never touches the config directory. */
  stop(): Promise<void>;
  /** Resolves when the service has stopped. */
  done: Promise<void>;
}

/**
 * Starts the discovery service with validated options and environment.
 *
 * @param options the validated `meshd discovery` flags
 * @param env the validated environment
 * @param logger the logger the `--log_*` flags configured
 * @throws Error naming the flag or variable when a listener cannot start or the CA cannot load
 */
export async function startDiscovery(
  options: DiscoveryOptions,
  env: MeshdEnvironment,
  logger: Logger,
): Promise<RunningDiscovery> {
  const started = performance.now();
  const log = logger.scope("default");
  log.info("effective flags", optionFields(options));
  log.info("effective environment", Object.fromEntries(ENV_VARS_IN_EFFECT.map((name) => [name, env[name]])));
  const mesh = await loadMeshConfig(options.meshConfig);
  for (const w of mesh.warnings) log.warn(w);
  const metrics = createMetrics();
  const source = kubeConfigSource(options, env, mesh.config.rootNamespace, logger, metrics.orch);
  const feed = source?.feed;
  const observers = discoveryObservers(metrics);
  const stops: (() => Promise<void>)[] = [];

  let ca: CertificateAuthority | undefined;
  if (env.ENABLE_CA_SERVER) {
    ca = new CertificateAuthority();
    const caLog = logger.scope("ca");
    const fromKube = await caSource(source?.kube, env, options.namespace, mesh.config.trustDomain, caLog);
    const bundle = await ca.start({
      ...fromKube.start,
      rootCaDir: env.ROOT_CA_DIR,
      trustDomain: mesh.config.trustDomain,
      selfSignedRsaKeySize: env.CA_SELF_SIGNED_CA_RSA_KEY_SIZE,
      selfSignedTtlMs: env.CA_SELF_SIGNED_CA_CERT_TTL,
      defaultTtlMs: env.DEFAULT_WORKLOAD_CERT_TTL,
      maxTtlMs: env.MAX_WORKLOAD_CERT_TTL,
      tokenAudiences: env.TOKEN_AUDIENCES,
      tokenIssuer: env.TOKEN_ISSUER,
      hooks: {
        onCsr: () => metrics.caServerCsrCount.inc(),
        onAuthFailure: (reason) => {
          metrics.caServerAuthenticationFailureCount.inc();
          caLog.warn(`CSR refused: ${reason}`);
        },
        onIdExtractionError: () => metrics.caServerIdExtractionErrCount.inc(),
        onParseError: (reason) => {
          metrics.caServerCsrParsingErrCount.inc();
          caLog.warn(`CSR unparsable: ${reason}`);
        },
        onSignError: (reason) => {
          metrics.caServerCsrSignErrCount.inc();
          caLog.error(`signing failed: ${reason}`);
        },
        onSuccess: (issued) => {
          metrics.caServerSuccessCertIssuanceCount.inc();
          caLog.info(`issued ${issued.spiffeId} (${issued.method}) until ${issued.notAfter.toISOString()}`);
        },
      },
    });
    for (const w of ca.warnings) caLog.warn(w);
    recordCaExpiry(metrics, bundle);
    ca.onBundleChange((b) => recordCaExpiry(metrics, b));
    caLog.info(
      fromKube.description ??
        `CA ${ca.createdRoot ? "created a self-signed root" : "loaded its root"} in ${env.ROOT_CA_DIR}`,
    );
    const rotator = startRootRotation(ca, {
      checkIntervalMs: env.CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL,
      gracePeriodPercentile: env.CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE,
      jitter: env.CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR,
      rootTtlMs: env.CA_SELF_SIGNED_CA_CERT_TTL,
    }, caLog);
    stops.push(() => rotator.stop(), () => ca!.stop(), () => fromKube.cleanup());
  }

  const secure = ca
    ? {
      addr: addressText(options.secureGRPCAddr),
      certificates: await secureCredentials(options, env.REVISION, ca, logger.scope("ca"), stops),
      register: (server: Parameters<CertificateAuthority["register"]>[0]) => ca!.register(server),
    }
    : undefined;

  const adsLog = logger.scope("ads");
  const jwksLog = logger.scope("authn");
  // Each skipped gateway server, and each AuthorizationPolicy rule that acts otherwise on TCP ports
  // (istio#25832, #44348), is warned once, when it first appears (Istio logs them per push).
  const gatewayLog = logger.scope("gateway");
  const authzLog = logger.scope("authorization");
  const routingLog = logger.scope("model");
  const gatewayWarnings = new FreshWarnings();
  const authzWarnings = new FreshWarnings();
  // And each part of a VirtualService tls/tcp rule bound to mesh that sidecars leave out.
  const meshRoutingWarnings = new FreshWarnings();
  const warnGateways = (ctx: PushContext): void => {
    for (const w of gatewayWarnings.fresh(ctx.gatewayWarnings)) gatewayLog.warn(w);
    for (const w of authzWarnings.fresh(ctx.authorizationWarnings)) authzLog.warn(w);
    for (const w of meshRoutingWarnings.fresh(meshL4RuleWarnings(ctx.virtualServices))) routingLog.warn(w);
  };
  const discovery = new DiscoveryServer({
    configDir: options.configDir,
    configFeed: feed,
    registry: source?.registry,
    grpcAddr: addressText(options.grpcAddr),
    rootNamespace: mesh.config.rootNamespace,
    trustDomain: mesh.config.trustDomain,
    proxySettings: mesh.config.proxySettings,
    scopeGatewayToNamespace: env.DISCO_SCOPE_GATEWAY_TO_NAMESPACE,
    debounceAfterMs: env.DISCO_DEBOUNCE_AFTER,
    debounceMaxMs: env.DISCO_DEBOUNCE_MAX,
    pushThrottle: env.DISCO_PUSH_THROTTLE,
    xdsCache: {
      enabled: env.DISCO_ENABLE_XDS_CACHE,
      services: env.DISCO_ENABLE_CDS_CACHE,
      routes: env.DISCO_ENABLE_RDS_CACHE,
      maxEntries: env.DISCO_XDS_CACHE_SIZE,
      stats: env.DISCO_ENABLE_XDS_CACHE && env.DISCO_XDS_CACHE_STATS ? xdsCacheMetrics(metrics) : undefined,
    },
    maxStreams: env.MESH_GPRC_MAXSTREAMS,
    maxRecvMessageBytes: env.MESH_GPRC_MAXRECVMSGSIZE,
    keepaliveIntervalMs: options.keepaliveIntervalMs,
    keepaliveTimeoutMs: options.keepaliveTimeoutMs,
    maxConnectionAgeMs: options.keepaliveMaxServerConnectionAgeMs,
    grpcTransport: options.grpcTransport,
    servingChildren: options.servingChildren,
    // The pool logs each death itself.
    onChildDeath: () => metrics.servingChildDeaths.inc(),
    logger: logger.scope(feed ? "kube" : "file"),
    onRejected: observers.onRejected,
    onPushContext: (ctx, ms, reasons, how) => {
      observers.onPushContext(ctx, ms, reasons, how);
      warnGateways(ctx);
      adsLog.debug(
        `push context ${ctx.version} ${how} in ${ms.toFixed(0)} ms`,
        Object.fromEntries(reasons),
      );
    },
    adsHooks: {
      ...observers.adsHooks,
      onConnect: (s) => {
        observers.adsHooks.onConnect?.(s);
        adsLog.info(`connected ${s.id} (${s.protocol}) from ${s.peer}`);
      },
      onDisconnect: (s) => {
        observers.adsHooks.onDisconnect?.(s);
        adsLog.info(`disconnected ${s.id}`);
      },
      onNack: (s, typeUrl, message) => {
        observers.adsHooks.onNack?.(s, typeUrl, message);
        adsLog.warn(`NACK from ${s.id} for ${typeUrl}: ${message}; it keeps its last good config`);
      },
    },
    secure,
    jwksFetchMode: parseJwksFetchMode(env.DISCO_JWT_ENABLE_REMOTE_JWKS),
    jwks: {
      refreshIntervalMs: env.DISCO_JWT_PUB_KEY_REFRESH_INTERVAL,
      insecureSkipVerify: env.JWKS_RESOLVER_INSECURE_SKIP_VERIFY,
      onFetch: (e) => {
        if (e.ok) {
          metrics.discoJwksResolverNetworkFetchSuccessTotal.inc();
          if (e.changed) jwksLog.info(`JWKS ${e.source}: new key set fetched`);
        } else {
          metrics.discoJwksResolverNetworkFetchFailTotal.inc();
          jwksLog.warn(
            `JWKS ${e.source}: fetch failed (${e.error}); ${keptAfterFailure(e)}, retry in ${e.retryInMs} ms`,
          );
        }
      },
    },
    authorize: xdsAuthorizer({ enabled: env.XDS_AUTH, trustDomain: mesh.config.trustDomain }),
    debug: {
      xdsAuth: env.XDS_AUTH,
      authPlaintext: env.XDS_AUTH_PLAINTEXT,
      authenticate: ca ? (credentials) => ca!.authenticate(credentials) : undefined,
      onRefused: (peer, reason) => adsLog.warn(`debug request from ${peer} refused: ${reason}`),
    },
    rootCertPem: ca ? () => ca!.trustBundlePem : undefined,
    autoRegistration: env.DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION
      ? {
        gracePeriodMs: env.DISCO_WORKLOAD_ENTRY_GRACE_PERIOD,
        hooks: {
          onSuccess: (key) => {
            metrics.autoRegistrationSuccessTotal.inc();
            logger.scope("wle").info(`auto-registered WorkloadEntry ${key}`);
          },
          onUpdate: () => metrics.autoRegistrationUpdatesTotal.inc(),
          onUnregister: () => metrics.autoRegistrationUnregisterTotal.inc(),
          onDelete: (key) => {
            metrics.autoRegistrationDeletesTotal.inc();
            logger.scope("wle").info(`removed auto-registered WorkloadEntry ${key} after the grace period`);
          },
          onError: () => metrics.autoRegistrationErrorsTotal.inc(),
        },
      }
      : undefined,
  });
  const { grpcPort, securePort } = await discovery.start();
  warnGateways(discovery.pushContext);
  // The process exits after the stops: no GOAWAY to proxies (denoland/deno#36788, meshd README).
  stops.unshift(() => discovery.stop(options.shutdownDurationMs, { exiting: true }));

  let ready = false;
  const monitoring = serveMonitoring(metrics, {
    address: options.monitoringAddr,
    localhostOnly: env.METRICS_LOCALHOST_ACCESS_ONLY,
    ready: () => ready,
  });
  stops.push(() => monitoring.shutdown());
  const kube = source
    ? startKubeControl(source.kube, { logger, env, namespace: options.namespace, ca, metrics })
    : undefined;
  if (kube) {
    // The Lease is released first, so that a successor leads while this replica drains.
    stops.unshift(() => kube.stepDown());
    stops.push(() => kube.stop());
  }
  let httpPort = 0;
  if (env.ENABLE_DEBUG_ON_HTTP) {
    const extra: DebugHandlers = {
      ...(ca ? { "/debug/bootstrapToken": ca.bootstrapTokenHandler() } : {}),
      ...kube?.debugHandlers,
    };
    const debug = serveDebug(discovery.debugPages, options.httpAddr, extra);
    httpPort = debug.addr.port;
    stops.push(() => debug.shutdown());
  }
  const webhooks = await serveWebhooks(options, env, ca, mesh.config.rootNamespace, metrics.registry, logger);
  if (webhooks) stops.unshift(() => webhooks.stop());
  const ctrlz = serveCtrlz(logger, { address: options.ctrlzAddress, port: options.ctrlzPort });
  stops.push(() => ctrlz.shutdown());

  ready = true;
  metrics.startupDurationSeconds.set((performance.now() - started) / 1000);
  log.info(`meshd ready in ${(performance.now() - started).toFixed(0)} ms`);

  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  let stopping: Promise<void> | undefined;
  const stop = () =>
    stopping ??= (async () => {
      ready = false;
      log.info(
        `shutting down: not accepting; up to ${options.shutdownDurationMs} ms for certificate requests in ` +
          "flight, then connections are left to the kernel (no GOAWAY)",
      );
      for (const s of stops) await s().catch((e) => log.error(`shutdown: ${(e as Error).message}`));
      resolveDone();
    })();
  return {
    ports: {
      grpc: grpcPort,
      secureGrpc: securePort,
      monitoring: monitoring.addr.port,
      http: httpPort,
      ctrlz: ctrlz.addr.port,
      https: webhooks?.port ?? 0,
    },
    stop,
    done,
  };
}

/**
 * The webhooks on --httpsAddr (webhooks/README.md): only with the CA, whose certificate they serve.
 * Without it, a --httpsAddr given on the command line warns; the default stays quiet.
 */
async function serveWebhooks(
  options: DiscoveryOptions,
  env: MeshdEnvironment,
  ca: CertificateAuthority | undefined,
  rootNamespace: string,
  registry: Parameters<typeof startWebhooks>[1]["registry"],
  logger: Logger,
): Promise<RunningWebhooks | undefined> {
  // The seed has no injection scope: the webhook server's lines, injection's too, log as validationServer.
  const log = logger.scope("validationServer");
  if (!ca) {
    log.warn("ENABLE_CA_SERVER is false: no webhooks on --httpsAddr (their certificate comes from the CA)");
    return undefined;
  }
  return await startWebhooks(ca, {
    address: options.httpsAddr,
    namespace: options.namespace,
    domain: options.domain,
    rootNamespace,
    injectEnabled: env.INJECT_ENABLED,
    nativeSidecars: env.ENABLE_NATIVE_SIDECARS,
    tokenAudiences: env.TOKEN_AUDIENCES,
    revision: env.REVISION,
    registry,
    caLog: logger.scope("ca"),
    log,
  });
}

/**
 * Runs the discovery service until SIGINT or SIGTERM, then shuts down gracefully.
 *
 * @param options the validated `meshd discovery` flags
 * @param env the validated environment
 * @param logger the logger the `--log_*` flags configured
 */
export async function runDiscovery(
  options: DiscoveryOptions,
  env: MeshdEnvironment,
  logger: Logger,
): Promise<void> {
  // Listening before start-up: "meshd ready" is logged inside startDiscovery, and a SIGTERM right
  // after it must stop meshd gracefully, not end it by the signal's default action.
  const state: { running?: RunningDiscovery; signalled: boolean } = { signalled: false };
  const onSignal = () => {
    state.signalled = true;
    void state.running?.stop();
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  const running = await startDiscovery(options, env, logger);
  state.running = running;
  if (state.signalled) void running.stop();
  await running.done;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
}
