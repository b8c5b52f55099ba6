/**
 * When and how much to push: the debounced triggers (config, registry, key sets, auto-registration,
 * proxies connecting and leaving), the push context each push gets, and which streams it goes to. A
 * push context is built whole unless every change since the last one was a connect or disconnect
 * (push_context/incremental.ts) or an edit of policy kinds only (push_context/policy_change.ts): then
 * it is derived from the last, as istiod's incremental pushes. Split out of discovery_server.ts,
 * which keeps the listeners and the lifecycle.
 *
 * @module
 */
import type { ProxySettings } from "../../shared/proxy_settings/mod.ts";
import { jwksFetcherOf, type JwksFetchMode } from "../../shared/mod.ts";
import type { ConfigChange, ConfigStore } from "../config_store/mod.ts";
import { Debouncer } from "../push_context/debounce.ts";
import { buildPushContext, type PushContext } from "../push_context/push_context.ts";
import { withConnected } from "../push_context/incremental.ts";
import { POLICY_KINDS, withPolicies } from "../push_context/policy_change.ts";
import type { ServiceRegistry } from "../push_context/registry_services.ts";
import type { AutoRegistry } from "../registry/auto_registration.ts";
import type { JwksResolver } from "../jwks/resolver.ts";
import type { ProxyNode } from "../xds/ads_types.ts";
import { type GeneratorCacheOptions, PushContextGenerator, workloadKeyOf } from "../xds/generators.ts";
import { isProxyless } from "../xds/grpcgen/grpcgen.ts";

/** Default of {@link PushSchedulerOptions.proxiedGraceMs}: 5 s, several reconnect backoffs of a proxy. */
export const PROXIED_GRACE_MS = 5_000;

/**
 * How a push context was made: `built` whole; `updated`, derived from the last for a change of policy
 * kinds only (still a full push in Istio's terms, whose `updateContext` is timed by
 * pilot_pushcontext_init_seconds as a whole build is, so disco_pushcontext_init_seconds counts both);
 * `connected`, derived for connects and disconnects only (Istio's incremental EDS push, not timed).
 */
export type PushContextHow = "built" | "updated" | "connected";

/** The discovery server's options that decide pushes (discovery_server.ts documents each). */
export interface PushSchedulerOptions {
  rootNamespace?: string;
  trustDomain?: string;
  proxySettings?: ProxySettings;
  scopeGatewayToNamespace?: boolean;
  debounceAfterMs?: number;
  debounceMaxMs?: number;
  registry?: ServiceRegistry;
  xdsCache?: GeneratorCacheOptions;
  proxiedGraceMs?: number;
  jwksFetchMode?: JwksFetchMode;
  jwks?: { refreshIntervalMs?: number };
  onPushContext?(ctx: PushContext, buildMs: number, reasons: Map<string, number>, how: PushContextHow): void;
}

/** What the scheduler pushes through and reads from. */
export interface PushTargets {
  store: ConfigStore;
  jwks: JwksResolver;
  auto?: AutoRegistry;
  /** Pushes the current context to every stream, or to those `only` accepts. */
  push(changedAt: number, only?: (node: ProxyNode) => boolean): void;
  /** Whether answers are still queued (the debouncer waits for them). */
  busy(): boolean;
}

/** The push side of the discovery server: its generator, debouncer and connected workloads. */
export class PushScheduler {
  readonly generator: PushContextGenerator;
  readonly #options: PushSchedulerOptions;
  readonly #targets: PushTargets;
  readonly #debouncer: Debouncer;
  /** Workload key to its streams; 0 while it is within the proxied grace after its last one left. */
  readonly #connected = new Map<string, number>();
  /** Workloads whose last stream left: the timer that makes them unproxied. */
  readonly #leaving = new Map<string, ReturnType<typeof setTimeout>>();
  #builds = 0;
  /** The config revision of the last push context: derived contexts keep it in their version. */
  #revision = "";
  /** Kinds of the config changes since the last push context. */
  #changedKinds = new Set<string>();

  constructor(options: PushSchedulerOptions, targets: PushTargets) {
    this.#options = options;
    this.#targets = targets;
    this.generator = new PushContextGenerator(this.#build(), options.xdsCache);
    this.#debouncer = new Debouncer((reasons, firstAt) => this.#push(reasons, firstAt), {
      afterMs: options.debounceAfterMs ?? 100,
      maxMs: options.debounceMaxMs ?? 10_000,
      busy: () => targets.busy(),
    });
  }

  /** Records an event that needs a push (`reason` labels disco_push_triggers). */
  trigger(reason: string): void {
    this.#debouncer.trigger(reason);
  }

  /** The config store changed: remembers the kinds, so that a policy-only change is derived. */
  configChanged(change: ConfigChange): void {
    for (const key of [...change.added, ...change.updated, ...change.removed]) {
      this.#changedKinds.add(key.slice(0, key.indexOf("/")));
    }
    this.#debouncer.trigger("config");
  }

  /** Builds the push context whole from the store as it is now (start). */
  rebuild(): void {
    this.generator.update(this.#build());
    this.#syncJwks(this.generator.context);
  }

  /** A stream of the workload `key` started (+1) or ended (-1): its proxied flag may flip. */
  proxyChanged(key: string, delta: number): void {
    const n = (this.#connected.get(key) ?? 0) + delta;
    const leaving = this.#leaving.get(key);
    clearTimeout(leaving);
    this.#leaving.delete(key);
    this.#connected.set(key, n);
    // Only the first stream of a workload and the last one to leave change its proxied flag; one
    // that comes back within the grace was never unproxied.
    if (delta > 0 && n === 1 && leaving === undefined) this.#debouncer.trigger("proxy");
    if (delta < 0 && n === 0) {
      this.#leaving.set(
        key,
        setTimeout(() => {
          this.#leaving.delete(key);
          if (this.#connected.get(key) !== 0) return;
          this.#connected.delete(key);
          this.#debouncer.trigger("proxy");
        }, this.#options.proxiedGraceMs ?? PROXIED_GRACE_MS),
      );
    }
  }

  /** Stops the debouncer (no more pushes). */
  stop(): void {
    this.#debouncer.stop();
  }

  /** Clears the proxied-grace timers: after the streams ended, each of which started one. */
  clearGraceTimers(): void {
    for (const t of this.#leaving.values()) clearTimeout(t);
  }

  #resources(): { revision: number; resources: Parameters<typeof buildPushContext>[0] } {
    const snapshot = this.#targets.store.snapshot();
    const auto = this.#targets.auto;
    return {
      revision: snapshot.revision,
      resources: auto ? [...snapshot.resources, ...auto.entries()] : snapshot.resources,
    };
  }

  #build(): PushContext {
    const { revision, resources } = this.#resources();
    this.#revision = String(revision);
    this.#changedKinds = new Set();
    return buildPushContext(resources, {
      version: `${revision}.${++this.#builds}`,
      rootNamespace: this.#options.rootNamespace,
      trustDomain: this.#options.trustDomain,
      proxySettings: this.#options.proxySettings,
      scopeGatewayToNamespace: this.#options.scopeGatewayToNamespace,
      connected: new Set(this.#connected.keys()),
      jwks: this.#targets.jwks.keys(),
      jwksFetchMode: this.#options.jwksFetchMode,
      jwksRefreshIntervalMs: this.#options.jwks?.refreshIntervalMs,
      registry: this.#options.registry?.snapshot(),
    });
  }

  /** Makes the JWKS resolver track the key sources that meshd fetches for the context's rules. */
  #syncJwks(ctx: PushContext): void {
    const options = { mode: ctx.jwksFetchMode, services: ctx.services };
    this.#targets.jwks.sync(
      ctx.requestAuthentications
        .flatMap((p) => p.spec.jwtRules ?? [])
        .filter((r) => jwksFetcherOf(r, options) === "meshd"),
    );
  }

  #push(reasons: Map<string, number>, changedAt: number): void {
    const kinds = this.#changedKinds;
    const onlyPolicies = kinds.size > 0 && [...kinds].every((k) => POLICY_KINDS.has(k));
    const derivable = [...reasons.keys()].every((r) => r === "proxy" || (r === "config" && onlyPolicies));
    if (derivable) return this.#pushDerived(reasons, changedAt, onlyPolicies);
    const started = performance.now();
    const ctx = this.#build();
    this.generator.update(ctx);
    this.#syncJwks(ctx);
    this.#options.onPushContext?.(ctx, performance.now() - started, reasons, "built");
    this.#targets.push(changedAt);
  }

  /**
   * Only proxies connected or left, or only policies changed, since the last push context: the next
   * one is derived from the last. A policy change goes to every stream (which lists change depends
   * on each proxy's selection; the unchanged ones cost a lookup, their lists are carried by identity);
   * a connect or disconnect alone only to the streams it changes anything for: those of the workloads
   * whose proxied flag flipped (their Workload), every stream when a service changed (an endpoint of
   * such a workload), and proxyless ones (their clusters read the flags of endpoints).
   */
  #pushDerived(reasons: Map<string, number>, changedAt: number, policies: boolean): void {
    const started = performance.now();
    const prev = this.generator.context;
    const version = `${this.#revision}.${this.#builds + 1}`;
    let ctx = prev;
    if (policies) {
      const { revision, resources } = this.#resources();
      this.#revision = String(revision);
      ctx = withPolicies(prev, resources, this.#changedKinds, `${revision}.${this.#builds + 1}`).context;
      this.#changedKinds = new Set();
    }
    const change = withConnected(ctx, new Set(this.#connected.keys()), ctx === prev ? version : ctx.version);
    if (change.context !== prev) {
      this.#builds++;
      this.generator.update(change.context);
      if (policies) this.#syncJwks(change.context);
    }
    const how = policies ? "updated" : "connected";
    this.#options.onPushContext?.(change.context, performance.now() - started, reasons, how);
    if (policies || change.servicesChanged) return this.#targets.push(changedAt);
    if (change.workloads.size === 0) return;
    this.#targets.push(
      changedAt,
      (node) => isProxyless(node) || change.workloads.has(workloadKeyOf(node) ?? ""),
    );
  }
}
