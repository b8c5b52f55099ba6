/**
 * Connects the discovery server's observers to meshd's metrics.
 *
 * @module
 */
import type { ValidationIssue } from "../../shared/mod.ts";
import type { PushContext } from "../push_context/push_context.ts";
import type { PushContextHow } from "../server/push_scheduler.ts";
import type { AdsHooks } from "../xds/ads_types.ts";
import type { MeshdMetrics } from "./metrics.ts";
import type { Tally } from "./tally.ts";

/** The short type name used as the `type` label: `mesh.v1.Workload` for its type URL. */
function short(typeUrl: string): string {
  return typeUrl.slice(typeUrl.lastIndexOf("/") + 1);
}

/** Observers for the discovery server that update the metrics. */
export function discoveryObservers(m: MeshdMetrics): {
  adsHooks: AdsHooks;
  onRejected(issue: ValidationIssue): void;
  onPushContext(ctx: PushContext, buildMs: number, reasons: Map<string, number>, how: PushContextHow): void;
} {
  // onSend, onAck and onProxyQueued run for every stream of every push: the series of a type are
  // looked up once, and each observation is a tally's few additions (tally.ts), not prom-client's
  // label hashing and validation per call.
  const children = new Map<string, { pushes: Tally; size: Tally; time: Tally }>();
  const sendMetrics = (typeUrl: string) => {
    let c = children.get(typeUrl);
    if (c === undefined) {
      const labels = { type: short(typeUrl) };
      c = {
        pushes: m.discoXdsPushes.tally(labels),
        size: m.discoXdsConfigSizeBytes.tally(labels),
        time: m.discoXdsPushTime.tally(labels),
      };
      children.set(typeUrl, c);
    }
    return c;
  };
  const convergence = m.discoProxyConvergenceTime.tally();
  const queued = m.discoProxyQueueTime.tally();
  return {
    adsHooks: {
      onConnect: () => m.discoXds.inc(),
      onDisconnect: () => m.discoXds.dec(),
      onNack: (_s, typeUrl) => m.discoTotalXdsRejects.inc({ type: short(typeUrl) }),
      onAck: (_s, _typeUrl, pushedAt) => convergence.observe((Date.now() - pushedAt) / 1000),
      onSend: (_s, typeUrl, _count, bytes, ms) => {
        const c = sendMetrics(typeUrl);
        c.pushes.observe(1);
        c.size.observe(bytes);
        c.time.observe(ms / 1000);
      },
      onExpiredNonce: (_s, typeUrl) => m.discoXdsExpiredNonce.inc({ type: short(typeUrl) }),
      onProxyQueued: (ms) => queued.observe(ms / 1000),
      onPushFanout: (ms) => m.discoPushFanoutTime.observe(ms / 1000),
    },
    onRejected: (issue) => m.discoTotalRejectedConfigs.inc({ type: issue.resource?.split(" ")[0] ?? "file" }),
    onPushContext: (ctx, buildMs, reasons, how) => {
      // As Istio's pilot_pushcontext_init_seconds: every full push's context (built whole, or updated
      // for policy kinds as istiod's updateContext), not the derived contexts of connects and
      // disconnects (an incremental push reuses istiod's push context).
      if (how !== "connected") m.discoPushcontextInitSeconds.observe(buildMs / 1000);
      m.discoServices.set(ctx.services.length);
      for (const [reason, n] of reasons) m.discoPushTriggers.inc({ type: reason }, n);
    },
  };
}
