/**
 * The proxy agent, after Istio's pilot-agent: obtains and rotates the workload certificate
 * ({@link CertificateManager}), keeps a Delta ADS stream to meshd ({@link AdsClient}; mutual TLS with
 * that certificate, or plain text), and publishes one immutable {@link RuntimeSnapshot} for the data
 * path: a new frozen value, with a higher revision, on every change it applies. When meshd is away
 * the last snapshot stays in force; a rotated certificate is published at once and the ADS stream
 * moves to it without a gap. JWT providers meshd leaves to the proxy get their keys from the
 * {@link ProxyJwksFetcher} (DISCO_JWT_ENABLE_REMOTE_JWKS), once per process: a new key set is a new
 * snapshot. Whoever fetched a provider's keys, the last good set stays in force until a newer good
 * one arrives ({@link KeptKeySets}): a push from a restarted meshd without keys does not remove them.
 *
 * @example
 * ```ts
 * const agent = new ProxyAgent({
 *   node: { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" },
 *   discoveryAddress: "meshd.mesh-system.svc:15012",
 *   rootCertFile: "/etc/certs/root-cert.pem",
 *   ca: { tokenFile: "/var/run/secrets/tokens/istio-token" },
 * });
 * agent.onChange((snapshot) => worker.postMessage(snapshot));
 * await agent.start();
 * ```
 *
 * @module
 */
import type { KeySetFetchEvent } from "../../shared/internal/jwks/refresher.ts";
import { ProxyJwksFetcher } from "../jwks/fetcher.ts";
import { type KeptKeySet, KeptKeySets } from "../jwks/kept_keys.ts";
import { EMPTY_SNAPSHOT, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import { AdsClient, type AdsClientHooks, type AdsClientStatus, type AdsConfig } from "./ads_client.ts";
import type { BackoffOptions } from "./backoff.ts";
import {
  type AgentLogger,
  CertificateManager,
  type CertificateManagerOptions,
  type CertificateStatus,
} from "./certificate_manager.ts";
import type { NodeOptions } from "./node.ts";
import { SUBSCRIBED } from "./resources.ts";

/** Options of {@link ProxyAgent}. */
export interface ProxyAgentOptions {
  /** This proxy: IP, workload name and namespace (or a WorkloadGroup to auto-register into). */
  node: NodeOptions;
  /** meshd's ADS address, `host:port`: --secureGRPCAddr (mutual TLS), or --grpcAddr with `plaintext`. */
  discoveryAddress: string;
  /** ADS over plain text; no certificate is needed for ADS then. */
  plaintext?: boolean;
  /** The roots meshd's serving certificate chains to (root-cert.pem), as PEM or a file. */
  rootsPem?: string;
  rootCertFile?: string;
  /** The name meshd's serving certificate must carry; default the dialled host (DNS or IP SAN). */
  serverName?: string;
  /**
   * The workload certificate; required for mutual TLS. `address` defaults to `discoveryAddress`
   * (meshd serves the CA on its secure port), `tokenFile` is the bootstrap token.
   */
  ca?: Omit<CertificateManagerOptions, "rootsPem" | "serverName" | "logger"> & { tokenFile: string };
  /** ADS reconnect delays; default 100 ms doubling to 30 s with jitter. */
  backoff?: BackoffOptions;
  /** ADS observers. */
  adsHooks?: AdsClientHooks;
  /**
   * The JWKS fetcher (providers meshd marks `jwksFetcher: PROXY`): its fetch observer, and the first
   * retry delay (default 1 s).
   */
  jwks?: { onFetch?(event: KeySetFetchEvent): void; retryInitialMs?: number };
  logger?: AgentLogger;
}

/** Listener of snapshots. */
export type SnapshotListener = (snapshot: RuntimeSnapshot) => void;

/** The agent. */
export class ProxyAgent {
  readonly #options: ProxyAgentOptions;
  readonly #listeners = new Set<SnapshotListener>();
  readonly #readyWaiters: ((s: RuntimeSnapshot) => void)[] = [];
  #snapshot: RuntimeSnapshot = EMPTY_SNAPSHOT;
  #ads: AdsClient | undefined;
  #certs: CertificateManager | undefined;
  readonly #jwks: ProxyJwksFetcher;
  readonly #keptKeys = new KeptKeySets();
  /** The providers verified with older keys than the config's, as last logged. */
  #kept: KeptKeySet[] = [];
  #started = false;

  /**
   * @param options the node, meshd's address and roots, and the certificate settings
   * @throws Error when mutual TLS is asked for without what it needs
   */
  constructor(options: ProxyAgentOptions) {
    if (!options.plaintext && !options.ca) {
      throw new Error(
        "ADS over mutual TLS needs a workload certificate: give ca.tokenFile, or plaintext: true",
      );
    }
    if ((!options.plaintext || options.ca) && !options.rootsPem && !options.rootCertFile) {
      throw new Error("talking TLS to meshd needs its root certificate: give rootsPem or rootCertFile");
    }
    this.#options = options;
    this.#jwks = new ProxyJwksFetcher({
      context: () => this.#snapshot,
      onChange: () => this.#publish(),
      onFetch: options.jwks?.onFetch,
      retryInitialMs: options.jwks?.retryInitialMs,
    });
  }

  /** The snapshot in force (frozen). */
  snapshot(): RuntimeSnapshot {
    return this.#snapshot;
  }

  /** Calls `listener` with every new snapshot; returns the unsubscribe function. */
  onChange(listener: SnapshotListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Resolves with the first snapshot that has the certificate (when one is configured) and an answer
   * from meshd for each of the four resource types.
   */
  ready(): Promise<RuntimeSnapshot> {
    if (this.#isReady(this.#snapshot)) return Promise.resolve(this.#snapshot);
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  /**
   * ADS, certificate and JWKS status, for a status page: the proxy's own fetches, the sources whose
   * key set is in force (`inForce`, whoever fetched), and the providers verified with an older set
   * because the config brought none usable (`keptOverConfig`).
   */
  status(): {
    ads?: AdsClientStatus;
    certificate?: CertificateStatus;
    jwks: ReturnType<ProxyJwksFetcher["status"]> & { inForce: string[]; keptOverConfig: KeptKeySet[] };
  } {
    const jwks = {
      ...this.#jwks.status(),
      inForce: Object.keys(this.#snapshot.jwks ?? {}).sort(),
      keptOverConfig: this.#kept,
    };
    return { ads: this.#ads?.status(), certificate: this.#certs?.status(), jwks };
  }

  /**
   * Starts the certificate manager and the ADS client; does not wait for meshd (see {@link ready}).
   *
   * @throws Error when the root certificate file cannot be read
   */
  async start(): Promise<void> {
    if (this.#started) return;
    if (!this.#ads) await this.#create();
    this.#started = true;
    this.#certs?.start();
    this.#ads!.start();
  }

  /**
   * Stops the certificate manager, ADS and JWKS fetching; the last snapshot stays readable, and
   * start() resumes from it (JWKS sources are fetched again with the next config). Idempotent.
   */
  async stop(options: { exiting?: boolean } = {}): Promise<void> {
    this.#certs?.stop();
    this.#jwks.sync({});
    this.#started = false;
    await this.#ads?.stop(options);
  }

  async #create(): Promise<void> {
    const o = this.#options;
    let rootsPem = o.rootsPem;
    if (!rootsPem && o.rootCertFile) {
      try {
        rootsPem = await Deno.readTextFile(o.rootCertFile);
      } catch (e) {
        throw new Error(`root certificate ${o.rootCertFile}: ${(e as Error).message}`);
      }
    }
    const certs = o.ca
      ? new CertificateManager({
        ...o.ca,
        address: o.ca.address ?? o.discoveryAddress,
        rootsPem,
        serverName: o.serverName,
        logger: o.logger,
      })
      : undefined;
    const ads = new AdsClient({
      address: o.discoveryAddress,
      node: o.node,
      plaintext: o.plaintext,
      rootsPem,
      serverName: o.serverName,
      backoff: o.backoff,
      hooks: o.adsHooks,
      logger: o.logger,
    });
    ads.onUpdate(() => this.#publish());
    certs?.onChange((cert) => {
      this.#publish();
      ads.setCertificate(cert);
    });
    this.#certs = certs;
    this.#ads = ads;
  }

  #logKept(kept: KeptKeySet[]): void {
    const textOf = (list: KeptKeySet[]) =>
      list.map((k) => `issuer ${k.issuer} (${k.source}): ${k.reason}`).join("; ");
    const text = textOf(kept);
    if (text === textOf(this.#kept)) return;
    this.#kept = kept;
    if (text !== "") {
      this.#options.logger?.warn(
        `JWKS: no usable key set in the config; keeping the last good one for ${text}`,
      );
    } else this.#options.logger?.info("JWKS: the config's key sets are usable again");
  }

  #isReady(s: RuntimeSnapshot): boolean {
    if (this.#options.ca && !s.certificate) return false;
    return SUBSCRIBED.every((t) => t.typeUrl in s.versions);
  }

  #publish(): void {
    const config: AdsConfig = this.#ads?.config ?? this.#snapshot;
    const certificate = this.#certs?.certificate;
    const next: RuntimeSnapshot = {
      revision: this.#snapshot.revision + 1,
      versions: config.versions,
      services: config.services,
      authorizations: config.authorizations,
      jwtPolicies: config.jwtPolicies,
      routes: config.routes,
      credentials: config.credentials,
    };
    const { keys, kept } = this.#keptKeys.update(config.jwtPolicies, this.#jwks.keys());
    if (Object.keys(keys).length > 0) next.jwks = keys;
    this.#logKept(kept);
    if (config.workload) next.workload = config.workload;
    if (certificate) next.certificate = certificate;
    this.#snapshot = Object.freeze(next);
    // After the snapshot is in force: a new source's first fetch reads its services and certificate.
    this.#jwks.sync(config.jwtPolicies);
    for (const l of this.#listeners) {
      try {
        l(this.#snapshot);
      } catch (e) {
        this.#options.logger?.warn(`snapshot listener failed: ${(e as Error).message}`);
      }
    }
    if (this.#isReady(this.#snapshot)) this.#readyWaiters.splice(0).forEach((w) => w(this.#snapshot));
  }
}
