/**
 * One process of simulated proxies for the scale bench: `count` delta ADS streams (Service, Workload,
 * Authorization, wildcard) over HTTP/2 connections of `perSession` streams each, every response ACKed.
 * Reads only each response's type, nonce and resource count (wire.ts), and the bench policy's version
 * in Authorization responses, and ACKs the messages of one chunk in one write, so that its CPU stays
 * small next to meshd's. BENCH_CLIENT (inherited from the runner) picks the HTTP/2 client:
 * client_transport.ts.
 *
 * Argument: a JSON {@link ClientSpec}. Stdout, one JSON line per event:
 * `{"event":"synced","times":[...]}` once every stream holds as many resources of each type as
 * `expect` says (or, with `expect` absent, `{"event":"counts",...}` after a second of quiet: the
 * probe that learns those counts), and `{"event":"converged","times":[...]}` once every stream has
 * received a new version of the bench policy after an `arm` line on stdin. Times are ms since the
 * epoch, 0 for a stream that did not get there; `report` on stdin sends what there is at once.
 *
 * @module
 */
import { type Counters, transport } from "./client_transport.ts";
import { DeltaReader } from "./delta_reader.ts";
import {
  ackLength,
  AUTHORIZATION,
  deltaRequest,
  type DeltaSummary,
  resourceNames,
  TYPES,
  typeUrlOf,
  versionFinder,
  writeAck,
} from "./wire.ts";

export { TYPES };

/** What one client process simulates. */
export interface ClientSpec {
  port: number;
  /** Index of the first proxy: proxy i is WorkloadEntry `client-<i>` of namespace `bench`. */
  first: number;
  count: number;
  perSession: number;
  /** Resources of each type a proxy holds once synced; absent for the probe. */
  expect?: Record<string, number>;
  /** The node id to use instead of `client-<i>`'s (the probe). */
  nodeId?: string;
}

/** The policy whose change the bench measures, as meshd names it. */
export const POLICY = "bench/bench-policy";

/** The node id of simulated proxy `i` (an Istio sidecar id naming WorkloadEntry client-<i>). */
export function nodeIdOf(i: number): string {
  return `sidecar~10.200.${(i >> 8) & 255}.${i & 255}~client-${i}.bench~bench.svc.cluster.local`;
}

interface Proxy {
  /** Resources received of each type, by index in TYPES. */
  counts: number[];
  /** Resources received of other types, by type URL. */
  others: Map<string, number>;
  syncedAt: number;
  policyVersion: string;
  baseline: string;
  convergedAt: number;
}

function emit(event: Record<string, unknown>): void {
  console.log(JSON.stringify(event));
}

const policyVersion = versionFinder(POLICY);

function run(spec: ClientSpec): void {
  const proxies: Proxy[] = [];
  let armed = false, syncReported = false, convergeReported = false, lastData = 0, bytes = 0;
  const counters: Counters = { errors: 0, closedSessions: 0, closedStreams: 0 };
  const probeNames = new Set<string>();
  const expect = spec.expect === undefined ? undefined : TYPES.map((t) => spec.expect![t] ?? 0);
  const expectOthers = Object.entries(spec.expect ?? {}).filter(([t]) => !TYPES.includes(t));
  const synced = (p: Proxy) =>
    expect !== undefined && expect.every((n, i) => p.counts[i] >= n) &&
    expectOthers.every(([t, n]) => (p.others.get(t) ?? 0) >= n);
  // Counted as they happen: a scan of every proxy per chunk was a fifth of the client's CPU at 10k.
  let opened = false, syncedCount = 0, convergedCount = 0;
  const check = () => {
    if (!opened) return;
    if (!syncReported && spec.expect && syncedCount === proxies.length) report("synced");
    if (armed && !convergeReported && convergedCount === proxies.length) report("converged");
  };
  const report = (what: "synced" | "converged") => {
    if (what === "synced") syncReported = true;
    else convergeReported = true;
    emit({
      event: what,
      ...counters,
      bytes,
      times: proxies.map((p) => what === "synced" ? p.syncedAt : p.convergedAt),
    });
  };
  /** Counts one response, notes the policy's version. */
  const receive = (p: Proxy, s: DeltaSummary, message: () => Uint8Array): void => {
    if (s.type >= 0) p.counts[s.type] += s.resources;
    else {
      const t = typeUrlOf(s);
      p.others.set(t, (p.others.get(t) ?? 0) + s.resources);
    }
    // The probe counts distinct names (a resource can come twice: the connection makes its own
    // workload proxied); the others count resources received, which is cheap and reaches
    // the probe's figure once they hold as much as it.
    if (spec.expect === undefined) {
      for (const r of resourceNames(message())) probeNames.add(`${typeUrlOf(s)} ${r.name}`);
    }
    if (s.type === AUTHORIZATION) {
      const version = policyVersion(message());
      if (version !== undefined) {
        p.policyVersion = version;
        if (armed && p.convergedAt === 0 && version !== p.baseline) {
          p.convergedAt = Date.now();
          convergedCount++;
        }
      }
    }
    if (p.syncedAt === 0 && synced(p)) {
      p.syncedAt = Date.now();
      syncedCount++;
    }
  };
  const streams = transport(Deno.env.get("BENCH_CLIENT") ?? "codec", spec.port, spec.perSession, counters);
  for (let k = 0; k < spec.count; k++) {
    const p: Proxy = {
      counts: TYPES.map(() => 0),
      others: new Map(),
      syncedAt: 0,
      policyVersion: "",
      baseline: "",
      convergedAt: 0,
    };
    proxies.push(p);
    const reader = new DeltaReader();
    // The ACKs of one chunk's messages go out in one write.
    const done: DeltaSummary[] = [];
    let ackBytes = 0;
    const onResponse = (s: DeltaSummary, message: () => Uint8Array) => {
      receive(p, s, message);
      done.push(s);
      ackBytes += ackLength(s);
    };
    const nodeId = spec.nodeId ?? nodeIdOf(spec.first + k);
    const opening = TYPES.map((typeUrl, i) => deltaRequest(i === 0 ? { nodeId, typeUrl } : { typeUrl }));
    // Not awaited: every connection is dialled at once; open() counts its own failures.
    void streams.open(join(opening), (chunk) => {
      lastData = Date.now();
      bytes += chunk.length;
      reader.push(chunk, onResponse);
      if (done.length === 0) return null;
      const acks = new Uint8Array(ackBytes);
      let at = 0;
      for (const s of done) at = writeAck(acks, at, s);
      done.length = 0;
      ackBytes = 0;
      check();
      return acks;
    });
  }
  opened = true;
  check();
  if (spec.expect === undefined) {
    const quiet = setInterval(() => {
      if (lastData === 0 || Date.now() - lastData < 1000) return;
      clearInterval(quiet);
      const counts: Record<string, number> = {};
      for (const key of probeNames) {
        const type = key.slice(0, key.indexOf(" "));
        counts[type] = (counts[type] ?? 0) + 1;
      }
      emit({ event: "counts", counts, errors: counters.errors });
    }, 100);
  }
  (async () => {
    const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
    for await (const chunk of lines) {
      for (const line of chunk.split("\n")) {
        if (line === "arm") {
          // Re-armed for another change (BENCH_POLICY_CHANGES): each change is timed on its own.
          for (const p of proxies) {
            p.baseline = p.policyVersion;
            p.convergedAt = 0;
          }
          convergeReported = false;
          convergedCount = 0;
          armed = true;
          emit({ event: "armed" });
        } else if (line === "report") {
          if (!syncReported) report("synced");
          if (armed && !convergeReported) report("converged");
        } else if (line === "exit") Deno.exit(0);
      }
    }
  })();
}

if (import.meta.main) run(JSON.parse(Deno.args[0]) as ClientSpec);

function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
