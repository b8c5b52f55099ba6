/**
 * meshd's Prometheus metrics, with the names and types of the meshd seed ("Exported metrics": Sum is
 * a counter, LastValue a gauge, Distribution a histogram), for what exists so far. One registry per
 * meshd, so tests can run several side by side.
 *
 * @module
 */
import client from "prom-client";
import { buildInfo } from "../../shared/mod.ts";
import type { XdsCacheStats } from "../xds/xds_cache.ts";
import { TalliedCounter, TalliedHistogram } from "./tally.ts";

const SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10, 20, 30];

/** Every metric meshd exports today. */
export interface MeshdMetrics {
  registry: client.Registry;
  discoXds: client.Gauge;
  /** Observed per pushed stream: tallied (tally.ts), exported as prom-client's. */
  discoXdsPushes: TalliedCounter<"type">;
  discoPushTriggers: client.Counter<"type">;
  discoProxyConvergenceTime: TalliedHistogram;
  discoXdsPushTime: TalliedHistogram<"type">;
  discoProxyQueueTime: TalliedHistogram;
  /** meshd's own, not in the seed: see createMetrics. */
  discoPushFanoutTime: client.Histogram;
  discoTotalXdsRejects: client.Counter<"type">;
  discoTotalRejectedConfigs: client.Counter<"type">;
  discoServices: client.Gauge;
  discoPushcontextInitSeconds: client.Histogram;
  discoXdsExpiredNonce: client.Counter<"type">;
  discoXdsConfigSizeBytes: TalliedHistogram<"type">;
  discoInboundUpdates: client.Counter<"type">;
  caServerCsrCount: client.Counter;
  caServerAuthenticationFailureCount: client.Counter;
  caServerCsrParsingErrCount: client.Counter;
  caServerCsrSignErrCount: client.Counter;
  caServerIdExtractionErrCount: client.Counter;
  caServerSuccessCertIssuanceCount: client.Counter;
  caServerRootCertExpiryTimestamp: client.Gauge;
  caServerRootCertExpirySeconds: client.Gauge;
  caServerCertChainExpiryTimestamp: client.Gauge;
  caServerCertChainExpirySeconds: client.Gauge;
  meshdUptimeSeconds: client.Gauge;
  servingChildDeaths: client.Counter;
  autoRegistrationSuccessTotal: client.Counter;
  autoRegistrationUpdatesTotal: client.Counter;
  autoRegistrationUnregisterTotal: client.Counter;
  autoRegistrationDeletesTotal: client.Counter;
  autoRegistrationErrorsTotal: client.Counter;
  meshBuild: client.Gauge<"component" | "tag">;
  startupDurationSeconds: client.Gauge;
  discoJwksResolverNetworkFetchSuccessTotal: client.Counter;
  discoJwksResolverNetworkFetchFailTotal: client.Counter;
  /** The webhook caBundle patcher's writes (meshd/webhooks/ca_bundle_patcher.ts). */
  webhookPatchAttemptsTotal: client.Counter;
  webhookPatchFailuresTotal: client.Counter;
  webhookPatchRetriesTotal: client.Counter;
  orch: OrchMetrics;
}

/** Creates the metrics in a fresh registry. */
export function createMetrics(): MeshdMetrics {
  const registry = new client.Registry();
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
    new client.Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
    new client.Gauge<L>({ name, help, labelNames, registers });
  const histogram = <L extends string>(name: string, help: string, labelNames: L[] = [], buckets = SECONDS) =>
    new client.Histogram<L>({ name, help, labelNames, buckets, registers });
  const tallied = <L extends string>(name: string, help: string, labelNames: L[] = [], buckets = SECONDS) =>
    new TalliedHistogram<L>({ name, help, labelNames, buckets, registers });
  const started = Date.now();
  /** A `*_seconds` gauge computed on scrape from its `*_timestamp` gauge (0 while that is unset), so it is live without a timer. */
  const secondsUntil = (name: string, help: string, timestamp: client.Gauge) =>
    new client.Gauge({
      name,
      help,
      registers,
      async collect() {
        // An unlabelled gauge reads 0 until set: then there is nothing to count down to.
        const at = (await timestamp.get()).values[0]?.value ?? 0;
        this.set(at === 0 ? 0 : at - Date.now() / 1000);
      },
    });
  const rootExpiry = gauge("ca_server_root_cert_expiry_timestamp", "Unix time of root expiry");
  const chainExpiry = gauge("ca_server_cert_chain_expiry_timestamp", "Unix time of chain expiry");
  const m: MeshdMetrics = {
    registry,
    discoXds: gauge("disco_xds", "Endpoints connected over xDS"),
    discoXdsPushes: new TalliedCounter({
      name: "disco_xds_pushes",
      help: "xDS responses sent, by type",
      labelNames: ["type"],
      registers,
    }),
    discoPushTriggers: counter("disco_push_triggers", "Pushes triggered, labelled by reason", ["type"]),
    discoProxyConvergenceTime: tallied(
      "disco_proxy_convergence_time",
      "Delay from config change to a proxy having all config (seconds)",
    ),
    discoXdsPushTime: tallied("disco_xds_push_time", "Time to generate and send a push (seconds)", [
      "type",
    ]),
    discoProxyQueueTime: tallied(
      "disco_proxy_queue_time",
      "Time a proxy waits in the push queue (seconds)",
    ),
    // Not in the seed (Istio has no such metric): a push's fan-out inside meshd, from the push context
    // built to the last stream served, so that the scale bench can tell meshd's time from its clients'.
    discoPushFanoutTime: histogram(
      "disco_push_fanout_time",
      "Time from a push's start to the last of its streams served (seconds)",
    ),
    discoTotalXdsRejects: counter("disco_total_xds_rejects", "xDS responses rejected by a proxy", ["type"]),
    discoTotalRejectedConfigs: counter("disco_total_rejected_configs", "Configs rejected or ignored", [
      "type",
    ]),
    discoServices: gauge("disco_services", "Known services"),
    discoPushcontextInitSeconds: histogram("disco_pushcontext_init_seconds", "Time to init the push context"),
    discoXdsExpiredNonce: counter("disco_xds_expired_nonce", "xDS requests with an expired nonce", ["type"]),
    discoXdsConfigSizeBytes: tallied(
      "disco_xds_config_size_bytes",
      "Sizes of pushed configs (bytes)",
      ["type"],
      [1, 1e3, 1e4, 1e5, 1e6, 4e6],
    ),
    discoInboundUpdates: counter("disco_inbound_updates", "Updates received", ["type"]),
    caServerCsrCount: counter("ca_server_csr_count", "CSRs received"),
    caServerAuthenticationFailureCount: counter(
      "ca_server_authentication_failure_count",
      "Authentication failures",
    ),
    caServerCsrParsingErrCount: counter("ca_server_csr_parsing_err_count", "CSR parse errors"),
    caServerCsrSignErrCount: counter("ca_server_csr_sign_err_count", "CSR signing errors"),
    caServerIdExtractionErrCount: counter("ca_server_id_extraction_err_count", "Identity extraction errors"),
    caServerSuccessCertIssuanceCount: counter(
      "ca_server_success_cert_issuance_count",
      "Successful issuances",
    ),
    caServerRootCertExpiryTimestamp: rootExpiry,
    caServerRootCertExpirySeconds: secondsUntil(
      "ca_server_root_cert_expiry_seconds",
      "Seconds until root cert expiry; negative if expired",
      rootExpiry,
    ),
    caServerCertChainExpiryTimestamp: chainExpiry,
    caServerCertChainExpirySeconds: secondsUntil(
      "ca_server_cert_chain_expiry_seconds",
      "Seconds until the generated cert chain expires; negative if expired",
      chainExpiry,
    ),
    meshdUptimeSeconds: new client.Gauge({
      name: "meshd_uptime_seconds",
      help: "Server uptime",
      registers,
      // Set on scrape, so the value is fresh without a timer.
      collect() {
        this.set((Date.now() - started) / 1000);
      },
    }),
    meshBuild: gauge("mesh_build", "Component build info", ["component", "tag"]),
    autoRegistrationSuccessTotal: counter("auto_registration_success_total", "Successful auto-registrations"),
    autoRegistrationUpdatesTotal: counter("auto_registration_updates_total", "Auto-registration updates"),
    autoRegistrationUnregisterTotal: counter("auto_registration_unregister_total", "Unregistrations"),
    autoRegistrationDeletesTotal: counter(
      "auto_registration_deletes_total",
      "Auto-registrations cleaned up by the periodic timer",
    ),
    autoRegistrationErrorsTotal: counter("auto_registration_errors_total", "Auto-registration errors"),
    startupDurationSeconds: gauge("startup_duration_seconds", "Time from process start to ready"),
    discoJwksResolverNetworkFetchSuccessTotal: counter(
      "disco_jwks_resolver_network_fetch_success_total",
      "Successful JWKS network fetches",
    ),
    discoJwksResolverNetworkFetchFailTotal: counter(
      "disco_jwks_resolver_network_fetch_fail_total",
      "Failed JWKS network fetches",
    ),
    // Not in the seed: serving children that died and were replaced (server/serving/README.md).
    servingChildDeaths: counter(
      "meshd_serving_child_deaths_total",
      "Serving child processes that died (denoland/deno#36788 aborts, kills) and were replaced",
    ),
    webhookPatchAttemptsTotal: counter("webhook_patch_attempts_total", "Webhook patch attempts"),
    webhookPatchFailuresTotal: counter("webhook_patch_failures_total", "Webhook patch failures"),
    webhookPatchRetriesTotal: counter("webhook_patch_retries_total", "Webhook patch retries"),
    orch: orchMetrics(registers),
  };
  m.meshBuild.set({ component: "meshd", tag: buildInfo().version }, 1);
  return m;
}

/**
 * The Kubernetes informers' and service registry's metrics (meshd/kube_source, meshd/kube_registry),
 * as Istio's pilot_k8s_cfg_events, pilot_k8s_reg_events, pilot_k8s_endpoints_pending_pod,
 * pilot_k8s_endpoints_with_no_pods, endpoint_no_pod, pilot_no_ip and controller_sync_errors_total.
 */
export interface OrchMetrics {
  /** disco_orch_cfg_events{type=<kind>, event=add|update|delete}: config informer events. */
  cfgEvents: client.Counter<"type" | "event">;
  /** disco_orch_reg_events{type=<kind>, event}: registry informer events. */
  regEvents: client.Counter<"type" | "event">;
  /** Endpoints whose targetRef pod is not known yet (left out until it is). */
  endpointsPendingPod: client.Gauge;
  /** Each endpoint found without its pod. */
  endpointsWithNoPods: client.Counter;
  /** Endpoints without a pod, pending ones included. */
  endpointNoPod: client.Gauge;
  /** Pods without an IP: missing from the endpoint table. */
  noIp: client.Gauge;
  /** Failed lists and watches of every informer (each retried). */
  controllerSyncErrors: client.Counter;
}

function orchMetrics(registers: client.Registry[]): OrchMetrics {
  const typeEvent: ("type" | "event")[] = ["type", "event"];
  return {
    cfgEvents: new client.Counter({
      name: "disco_orch_cfg_events",
      help: "Events from orchestrator config",
      labelNames: typeEvent,
      registers,
    }),
    regEvents: new client.Counter({
      name: "disco_orch_reg_events",
      help: "Events from the orchestrator registry",
      labelNames: typeEvent,
      registers,
    }),
    endpointsPendingPod: new client.Gauge({
      name: "disco_orch_endpoints_pending_pod",
      help: "Endpoints currently with no pod",
      registers,
    }),
    endpointsWithNoPods: new client.Counter({
      name: "disco_orch_endpoints_with_no_pods",
      help: "Endpoints with no pods",
      registers,
    }),
    endpointNoPod: new client.Gauge({ name: "endpoint_no_pod", help: "Endpoints without a pod", registers }),
    noIp: new client.Gauge({ name: "disco_no_ip", help: "Pods missing from the endpoint table", registers }),
    controllerSyncErrors: new client.Counter({
      name: "controller_sync_errors_total",
      help: "Controller sync errors",
      registers,
    }),
  };
}

/**
 * Sets the CA expiry gauges from the CA's bundle, at start and after every root rotation:
 * ca_server_root_cert_expiry_* from the root, ca_server_cert_chain_expiry_* from the signing chain
 * of a plugged-in CA (Istio records the chain only when there is one; a self-signed root has none).
 * The `*_seconds` gauges count down on every scrape.
 */
export function recordCaExpiry(
  m: MeshdMetrics,
  bundle: { source: string; rootNotAfter: Date; chainNotAfter: Date },
): void {
  m.caServerRootCertExpiryTimestamp.set(bundle.rootNotAfter.getTime() / 1000);
  if (bundle.source === "plugged-in") {
    m.caServerCertChainExpiryTimestamp.set(bundle.chainNotAfter.getTime() / 1000);
  } else m.caServerCertChainExpiryTimestamp.reset();
}

/**
 * The xDS cache's metrics, registered only when DISCO_XDS_CACHE_STATS asks for them (Istio's
 * PILOT_XDS_CACHE_STATS; pilot/pkg/model/typed_xds_cache.go): xds_cache_reads{type=hit|miss},
 * xds_cache_evictions{type=clear|size}, xds_cache_size. Istio's xds_cache_dependent_config_size is
 * not exported: meshd's cache keeps no dependent-config index (meshd/xds/xds_cache.ts).
 *
 * @returns the observers to hand to the cache
 */
export function xdsCacheMetrics(m: MeshdMetrics): XdsCacheStats {
  const registers = [m.registry];
  const reads = new client.Counter({
    name: "xds_cache_reads",
    help: "Total number of xds cache xdsCacheReads.",
    labelNames: ["type"],
    registers,
  });
  const evictions = new client.Counter({
    name: "xds_cache_evictions",
    help: "Total number of xds cache evictions.",
    labelNames: ["type"],
    registers,
  });
  const size = new client.Gauge({ name: "xds_cache_size", help: "Current size of xds cache", registers });
  return {
    read: (type) => reads.inc({ type }),
    evicted: (type, count) => evictions.inc({ type }, count),
    size: (entries) => size.set(entries),
  };
}
