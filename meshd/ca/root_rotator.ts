/**
 * When to rotate the self-signed root, after istiod's SelfSignedCARootCertRotator
 * (security/pkg/pki/ca/selfsignedcarootcertrotator.go) and CertUtil.GetWaitTime
 * (security/pkg/util/certutil.go):
 *
 * - with CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR the rotator first waits a random whole number of
 *   seconds in [0, CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL), so that replicas do not check in step;
 * - then it checks every CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL (zero or negative: never);
 * - a check rotates when the root's remaining lifetime is at most
 *   CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE % of its whole lifetime (NotBefore to NotAfter),
 *   or when it has expired.
 *
 * The decisions are the pure functions {@link rootRotationWaitMs} and {@link rotatorStartDelayMs};
 * {@link RootCertRotator} only runs the timers and calls the check it is given.
 *
 * @module
 */

/** The four environment variables of root rotation, in the units meshd's environment gives them. */
export interface RootRotationSettings {
  /** CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL, ms; zero or negative disables rotation. */
  checkIntervalMs: number;
  /** CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE, 0-100. */
  gracePeriodPercentile: number;
  /** CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR. */
  jitter: boolean;
  /** CA_SELF_SIGNED_CA_CERT_TTL, ms: the lifetime of each new root. */
  rootTtlMs: number;
}

/**
 * Istio's GetWaitTime: how long until the root enters its grace period, ms; 0 when it is already in
 * it or has expired (rotate now).
 *
 * @param root the root's validity (NotBefore, NotAfter)
 * @param now the current time
 * @param gracePeriodPercentile the share of the whole lifetime, in percent, that is the grace period
 */
export function rootRotationWaitMs(
  root: { notBefore: Date; notAfter: Date },
  now: Date,
  gracePeriodPercentile: number,
): number {
  const left = root.notAfter.getTime() - now.getTime();
  if (left <= 0) return 0;
  const grace = (root.notAfter.getTime() - root.notBefore.getTime()) * (gracePeriodPercentile / 100);
  return Math.max(0, left - grace);
}

/** Whether a check at `now` rotates the root (its wait time is 0). */
export function shouldRotateRoot(
  root: { notBefore: Date; notAfter: Date },
  now: Date,
  gracePeriodPercentile: number,
): boolean {
  return rootRotationWaitMs(root, now, gracePeriodPercentile) === 0;
}

/**
 * The delay before the first check, ms: with jitter, whole seconds drawn uniformly from
 * [0, checkInterval) as Istio's `rand.Int63n(CheckInterval)` truncated to seconds; without, 0.
 *
 * @param random a number in [0, 1); Math.random by default
 */
export function rotatorStartDelayMs(
  checkIntervalMs: number,
  jitter: boolean,
  random: () => number = Math.random,
): number {
  if (!jitter || checkIntervalMs <= 0) return 0;
  return Math.floor((random() * checkIntervalMs) / 1000) * 1000;
}

/** Runs the rotator's timers: after the start delay, `check` every interval, never two at once. */
export class RootCertRotator {
  readonly #settings: RootRotationSettings;
  readonly #check: () => Promise<void>;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #interval: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  /**
   * @param settings the check interval and jitter (the other two settings are the check's business)
   * @param check called on every tick; its errors are its own to report (they are swallowed here)
   */
  constructor(settings: RootRotationSettings, check: () => Promise<void>) {
    this.#settings = settings;
    this.#check = check;
  }

  /**
   * Starts the timers, unless the interval is not positive.
   *
   * @returns the delay before the first check, ms, or undefined when rotation is disabled
   */
  start(random: () => number = Math.random): number | undefined {
    const { checkIntervalMs, jitter } = this.#settings;
    if (checkIntervalMs <= 0 || this.#stopped) return undefined;
    const delay = rotatorStartDelayMs(checkIntervalMs, jitter, random);
    // As Istio's ticker: the first check comes one interval after the jitter wait.
    this.#timer = setTimeout(() => {
      this.#interval = setInterval(() => void this.tick(), checkIntervalMs);
    }, delay);
    return delay;
  }

  /** Runs one check now unless one is under way (then waits for that one). */
  tick(): Promise<void> {
    this.#running ??= this.#check().catch(() => {}).finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** Stops the timers and waits for a check under way. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#interval);
    await this.#running;
  }
}
