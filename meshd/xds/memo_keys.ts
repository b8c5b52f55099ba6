/**
 * The keys under which the generator (generators.ts) memoizes a workload's lists in a push context,
 * and the workload view a connected proxy's own Workload is generated from.
 *
 * @module
 */
import type { WorkloadView } from "../push_context/push_context.ts";

/** The keys of a workload's lists in the generator's memo, and what they were made of. */
export interface MemoKeys {
  namespace: string;
  labels: Readonly<Record<string, string>>;
  workload: string;
  /** The Workload list of a workload not proxied yet, as its connected proxy receives it. */
  connectingWorkload: string;
  routes: string;
  credentials: string;
  /** Policies select by namespace and labels: workloads of one deployment share these lists. */
  authorization: string;
  jwtPolicy: string;
}

/**
 * Built once per workload view and push context, not per stream and type: a key made anew is hashed
 * anew on every lookup, and every stream looks up each of its types on every push.
 */
export const MEMO_KEYS: WeakMap<WorkloadView, MemoKeys> = new WeakMap<WorkloadView, MemoKeys>();

/** The node id prefix of a gateway (Istio's `router~`): its connection does not make its workload proxied. */
export const ROUTER_PREFIX = "router~";

/** Each unproxied workload view as proxied, once per view (every stream of a push asks for it). */
const PROXIED_VIEWS = new WeakMap<WorkloadView, WorkloadView>();

/** `w` with `proxied` set, as withConnected (push_context/incremental.ts) derives it for a connected proxy. */
export function proxiedView(w: WorkloadView): WorkloadView {
  let view = PROXIED_VIEWS.get(w);
  if (view === undefined) PROXIED_VIEWS.set(w, view = { ...w, proxied: true });
  return view;
}

/** The memo keys of a workload view (the generator keeps them per view and push context). */
export function memoKeys(w: WorkloadView): MemoKeys {
  const selection = w.namespace + "\u0000" +
    JSON.stringify(Object.entries(w.labels).sort(([a], [b]) => a < b ? -1 : 1));
  return {
    namespace: w.namespace,
    labels: w.labels,
    workload: `w\u0000${w.key}`,
    connectingWorkload: `c\u0000${w.key}`,
    routes: `r\u0000${w.key}`,
    credentials: `t\u0000${w.key}`,
    authorization: `a\u0000${selection}`,
    jwtPolicy: `j\u0000${selection}`,
  };
}

/** The same label set (keys and values; order does not matter, as the policies' selection). */
export function sameLabels(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    if (!Object.hasOwn(b, k) || a[k] !== b[k]) return false;
    n++;
  }
  for (const k in b) if (Object.hasOwn(b, k)) n--;
  return n === 0;
}
