/**
 * The push context after proxies connected or disconnected, derived from the last one instead of
 * built whole: only the proxied flags change (a connected proxy makes its workload proxied, meshd
 * issue "Service registry"), so only the workloads whose flag flips and the services with an endpoint
 * of such a workload are new objects; everything else is the last context's, shared. As Istio's
 * incremental EDS push (pilot/pkg/xds/eds.go: a push that is not Full reuses the push context and
 * updates only the endpoints of the services it names), while a config change still builds whole.
 *
 * The result equals what buildPushContext gives for the same config with the new connected set
 * (incremental_test.ts checks it on random connect and disconnect sequences), and is frozen as it is.
 *
 * @module
 */
import { deepFreeze, FrozenMap } from "./frozen.ts";
import { proxiedByLabels } from "./push_context.ts";
import type { EndpointView, PushContext, ServiceView, WorkloadView } from "./views.ts";

/** A derived push context and what changed in it, so that only the proxies concerned are pushed. */
export interface ConnectedChange {
  readonly context: PushContext;
  /** Keys of the workloads whose proxied flag flipped: their own Workload resource changed. */
  readonly workloads: ReadonlySet<string>;
  /** Whether a service changed (an endpoint of such a workload): every proxy's Service list did. */
  readonly servicesChanged: boolean;
}

/**
 * The push context `prev` with `connected` as the workloads whose proxy is connected; `prev` itself
 * is unchanged. When no flag flips, `prev` is returned as it is.
 *
 * @param prev the last push context (built whole or derived)
 * @param connected keys (`<namespace>/<name>`) of the workloads whose proxy is connected now
 * @param version the derived context's version label
 */
export function withConnected(
  prev: PushContext,
  connected: ReadonlySet<string>,
  version: string,
): ConnectedChange {
  const flipped = new Map<string, WorkloadView>();
  for (const w of prev.workloads.values()) {
    // Labels never change here: a workload that was not proxied is proxied now only when connected.
    const proxied = connected.has(w.key) || (w.proxied && proxiedByLabels(w.labels));
    if (proxied !== w.proxied) flipped.set(w.key, { ...w, proxied });
  }
  if (flipped.size === 0) return { context: prev, workloads: new Set(), servicesChanged: false };

  const workloads = new Map(prev.workloads);
  for (const [key, w] of flipped) workloads.set(key, w);
  const services = [...prev.services];
  let servicesChanged = false;
  for (const i of affectedServices(prev.services, flipped)) {
    const s = services[i];
    services[i] = { ...s, endpoints: s.endpoints.map((e) => withWorkload(e, flipped.get(e.workload))) };
    servicesChanged = true;
  }
  return {
    context: deepFreeze({
      ...prev,
      version,
      builtAt: Date.now(),
      workloads: new FrozenMap(workloads),
      services: servicesChanged ? services : prev.services,
    }),
    workloads: new Set(flipped.keys()),
    servicesChanged,
  };
}

/** An endpoint of `w` as buildPushContext makes it: proxied, and the identity only when proxied. */
function withWorkload(e: EndpointView, w: WorkloadView | undefined): EndpointView {
  if (w === undefined) return e;
  return { ...e, proxied: w.proxied, identity: w.proxied ? w.identity : "" };
}

/** Indexes of the services with an endpoint of one of `workloads`. */
function affectedServices(
  services: readonly ServiceView[],
  workloads: ReadonlyMap<string, unknown>,
): number[] {
  const index = servicesByWorkload(services);
  const out = new Set<number>();
  for (const key of workloads.keys()) for (const i of index.get(key) ?? []) out.add(i);
  return [...out];
}

/** Each workload's services, by index: kept per services array, which derived contexts share. */
const INDEXES = new WeakMap<readonly ServiceView[], Map<string, number[]>>();

function servicesByWorkload(services: readonly ServiceView[]): Map<string, number[]> {
  let index = INDEXES.get(services);
  if (index) return index;
  index = new Map();
  services.forEach((s, i) => {
    for (const e of s.endpoints) {
      if (e.workload === "") continue;
      const list = index!.get(e.workload) ?? [];
      if (list.at(-1) !== i) list.push(i);
      index!.set(e.workload, list);
    }
  });
  INDEXES.set(services, index);
  return index;
}
