/**
 * Leader election over a `coordination.k8s.io/v1` Lease (issue 14, item 4), as client-go's
 * tools/leaderelection and istiod's pilot/pkg/leaderelection run it: every replica is a candidate; the
 * one holding the Lease is the leader and alone runs the controllers that write to the API (webhook
 * caBundle, CRD status). Every replica serves ADS and the CA whatever the election says.
 *
 * The algorithm (client-go's `tryAcquireOrRenew`):
 * - every `retryPeriodMs` a candidate GETs the Lease; when there is none it creates it (a 409 on create
 *   means another replica was first);
 * - another holder's Lease is taken over only after it has not changed for `leaseDurationMs`, measured on
 *   this replica's clock from when this replica saw it change (client-go's observedTime: immune to clock
 *   skew between replicas); an empty `holderIdentity` (a released Lease) is free at once;
 * - taking or renewing is a PUT carrying the resourceVersion read: of two replicas racing, the API server
 *   stores one and answers 409 to the other, which re-reads on its next try;
 * - the leader renews every `retryPeriodMs`; when no renewal succeeded for `renewDeadlineMs` (less than
 *   the lease duration, so before anyone else may take over), or a read shows another holder, it stops
 *   leading at once and is a candidate again;
 * - {@link LeaderElector.stop} with `release` writes an empty holder (client-go's ReleaseOnCancel, which
 *   istiod sets), so that a successor takes over on its next try instead of after the lease duration.
 *
 * Defaults are istiod's: lease 30 s, renew deadline 15 s, retry period 5 s.
 *
 * @module
 */

/** The requests the elector makes: {@link ApiClient.json} of meshd/kube_source/api_client.ts. */
export interface LeaseApi {
  json<T>(method: string, path: string, req?: { body?: unknown; signal?: AbortSignal }): Promise<T>;
}

/** istiod's election timings, ms. */
export const LEASE_DURATION_MS = 30_000;
export const RENEW_DEADLINE_MS = 15_000;
export const RETRY_PERIOD_MS = 5_000;

/** The Lease's name (istiod's is `istio-leader`). */
export const LEASE_NAME = "meshd-leader";

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  api: LeaseApi;
  /** The Lease's namespace (POD_NAMESPACE). */
  namespace: string;
  /** Default {@link LEASE_NAME}. */
  name?: string;
  /** This replica (POD_NAME, else the host name). */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: { info(m: string): void; warn(m: string): void };
}

/** A Lease as read and written (only the fields used). */
interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** What the elector shows on /debug/leader. */
export interface ElectionStatus {
  lease: string;
  identity: string;
  leading: boolean;
  /** The holder last read from the Lease ("" when released, undefined before the first read). */
  holder: string | undefined;
  electionEnabled: boolean;
}

/** Something that can say whether this replica leads now, and tell when that changes. */
export interface Leadership {
  readonly leading: boolean;
  /** Calls `listener(leading)` on every change; returns the unsubscribe function. */
  onChange(listener: (leading: boolean) => void): () => void;
  status(): ElectionStatus;
  /** Stops electing; with `release`, gives the Lease up first when held. */
  stop(options?: { release?: boolean }): Promise<void>;
}

/** ENABLE_LEADER_ELECTION=false: this replica always leads (istiod assumes one instance). */
export function alwaysLeader(identity: string): Leadership {
  return {
    leading: true,
    onChange: () => () => {},
    status: () => ({ lease: "", identity, leading: true, holder: identity, electionEnabled: false }),
    stop: () => Promise.resolve(),
  };
}

const isoNow = (): string => new Date().toISOString().replace(/(\.\d{3})\d*Z$/, "$1000Z");

/** A candidate for the Lease; call {@link start}. */
export class LeaderElector implements Leadership {
  readonly #o: LeaderElectorOptions;
  readonly #path: string;
  readonly #listeners = new Set<(leading: boolean) => void>();
  readonly #abort = new AbortController();
  #leading = false;
  #holder: string | undefined;
  /** The Lease as last read, and when (performance.now()) its content last changed. */
  #observed: { key: string; at: number } | undefined;
  #deadline: ReturnType<typeof setTimeout> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #loop: Promise<void> | undefined;
  #stopped = false;

  /** @param options the API, the Lease, this replica's identity and the timings */
  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.#path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/leases/${
      encodeURIComponent(this.#name)
    }`;
  }

  get #name(): string {
    return this.#o.name ?? LEASE_NAME;
  }

  get leading(): boolean {
    return this.#leading;
  }

  onChange(listener: (leading: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  status(): ElectionStatus {
    return {
      lease: `${this.#o.namespace}/${this.#name}`,
      identity: this.#o.identity,
      leading: this.#leading,
      holder: this.#holder,
      electionEnabled: true,
    };
  }

  /** Starts trying at once, then every retry period. */
  start(): void {
    if (this.#loop || this.#stopped) return;
    this.#loop = this.#tick();
  }

  async stop(options: { release?: boolean } = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#deadline);
    this.#abort.abort();
    await this.#loop;
    const wasLeading = this.#leading;
    this.#setLeading(false, "stopping");
    if (options.release && wasLeading) await this.#release();
  }

  /**
   * Runs `fn` with a signal that aborts after the renew deadline (client-go's per-renewal timeout: a
   * hung request must not keep a leader from noticing that it lost the Lease, nor hang the shutdown),
   * and when the elector stops unless `outliveStop`.
   */
  async #bounded<T>(fn: (signal: AbortSignal) => Promise<T>, outliveStop = false): Promise<T> {
    const attempt = new AbortController();
    const onStop = () => attempt.abort();
    if (!outliveStop) this.#abort.signal.addEventListener("abort", onStop, { once: true });
    const timeout = setTimeout(
      () => attempt.abort(new Error("timed out")),
      this.#o.renewDeadlineMs ?? RENEW_DEADLINE_MS,
    );
    try {
      return await fn(attempt.signal);
    } finally {
      clearTimeout(timeout);
      this.#abort.signal.removeEventListener("abort", onStop);
    }
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      if (await this.#bounded((signal) => this.#tryAcquireOrRenew(signal))) this.#renewed();
    } catch (e) {
      if (this.#stopped) return;
      this.#o.log.warn(`leader election: lease ${this.status().lease}: ${(e as Error).message}`);
    }
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#loop = this.#tick();
    }, this.#o.retryPeriodMs ?? RETRY_PERIOD_MS);
  }

  /**
   * Leads (again) until the renew deadline from now: when no later renewal succeeds by then, leading
   * stops at that moment, whatever the request in flight is doing.
   */
  #renewed(): void {
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(
      () => this.#setLeading(false, "could not renew the lease within the renew deadline"),
      this.#o.renewDeadlineMs ?? RENEW_DEADLINE_MS,
    );
    this.#setLeading(true, "acquired the lease");
  }

  /** One try; true when this replica holds the Lease after it. */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = isoNow();
    const durationS = Math.ceil((this.#o.leaseDurationMs ?? LEASE_DURATION_MS) / 1000);
    const mine = { holderIdentity: this.#o.identity, leaseDurationSeconds: durationS, renewTime: now };
    const current = await this.#get(signal);
    if (!current) {
      const lease: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: this.#name, namespace: this.#o.namespace },
        spec: { ...mine, acquireTime: now, leaseTransitions: 0 },
      };
      const created = await this.#write("POST", this.#path.replace(/\/[^/]*$/, ""), lease, signal);
      return created !== undefined;
    }
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    if (holder !== this.#o.identity) {
      if (this.#leading) this.#setLeading(false, `the lease is held by ${holder || "nobody"}`);
      const expired =
        performance.now() - this.#observed!.at > (spec.leaseDurationSeconds ?? durationS) * 1000;
      if (holder !== "" && !expired) return false;
    }
    const next: Lease = {
      ...current,
      spec: holder === this.#o.identity
        ? { ...spec, ...mine }
        : { ...spec, ...mine, acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 },
    };
    return await this.#write("PUT", this.#path, next, signal) !== undefined;
  }

  /** GETs the Lease; notes when its content changed. Undefined on 404. */
  async #get(signal: AbortSignal): Promise<Lease | undefined> {
    let lease: Lease;
    try {
      lease = await this.#o.api.json<Lease>("GET", this.#path, { signal });
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return undefined;
      throw e;
    }
    this.#holder = lease.spec?.holderIdentity ?? "";
    const key = JSON.stringify(lease.spec ?? {});
    if (this.#observed?.key !== key) this.#observed = { key, at: performance.now() };
    return lease;
  }

  /** Creates or updates; undefined when another replica won the race (409). */
  async #write(method: string, path: string, lease: Lease, signal: AbortSignal): Promise<Lease | undefined> {
    try {
      const stored = await this.#o.api.json<Lease>(method, path, { body: lease, signal });
      this.#holder = stored.spec?.holderIdentity ?? "";
      this.#observed = { key: JSON.stringify(stored.spec ?? {}), at: performance.now() };
      return stored;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 409) return undefined;
      throw e;
    }
  }

  /** Writes an empty holder, so that a candidate takes over on its next try (client-go's release). */
  async #release(): Promise<void> {
    try {
      const released = await this.#bounded(async (signal) => {
        const current = await this.#o.api.json<Lease>("GET", this.#path, { signal });
        if (current.spec?.holderIdentity !== this.#o.identity) return false;
        const spec = { ...current.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: isoNow() };
        await this.#o.api.json<Lease>("PUT", this.#path, { body: { ...current, spec }, signal });
        return true;
      }, true);
      if (!released) return;
      this.#holder = "";
      this.#o.log.info(`leader election: released lease ${this.status().lease}`);
    } catch (e) {
      this.#o.log.warn(
        `leader election: could not release lease ${this.status().lease}: ${(e as Error).message}`,
      );
    }
  }

  #setLeading(leading: boolean, why: string): void {
    if (!leading) clearTimeout(this.#deadline);
    if (leading === this.#leading) return;
    this.#leading = leading;
    const lease = this.status().lease;
    this.#o.log.info(
      leading
        ? `leader election: ${this.#o.identity} is now the leader (lease ${lease}): ${why}`
        : `leader election: ${this.#o.identity} stopped leading (lease ${lease}): ${why}`,
    );
    for (const l of [...this.#listeners]) l(leading);
  }
}
