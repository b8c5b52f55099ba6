/**
 * One process of simulated proxies for the scale bench: `count` delta ADS streams (Service, Workload,
 * Authorization, wildcard) over HTTP/2 connections of `perSession` streams each, every response ACKed.
 * Reads only each response's type, nonce and resource count (wire.ts), and the names and versions of
 * Authorization responses, so that its CPU stays small next to meshd's.
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
import * as http2 from "node:http2";
import { deltaRequest, MessageReader, readDelta, resourceNames } from "./wire.ts";

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

/** The resource types every simulated proxy subscribes to (wildcard). */
export const TYPES = ["Service", "Workload", "Authorization"].map((t) => `type.googleapis.com/mesh.v1.${t}`);
/** The policy whose change the bench measures, as meshd names it. */
export const POLICY = "bench/bench-policy";

/** The node id of simulated proxy `i` (an Istio sidecar id naming WorkloadEntry client-<i>). */
export function nodeIdOf(i: number): string {
  return `sidecar~10.200.${(i >> 8) & 255}.${i & 255}~client-${i}.bench~bench.svc.cluster.local`;
}

interface Proxy {
  counts: Map<string, number>;
  syncedAt: number;
  policyVersion: string;
  baseline: string;
  convergedAt: number;
}

function emit(event: Record<string, unknown>): void {
  console.log(JSON.stringify(event));
}

function run(spec: ClientSpec): void {
  const proxies: Proxy[] = [];
  let armed = false, syncReported = false, convergeReported = false, errors = 0, lastData = 0;
  const sessions: http2.ClientHttp2Session[] = [];
  const probeNames = new Set<string>();
  let closedSessions = 0, closedStreams = 0;
  const synced = (p: Proxy) =>
    spec.expect !== undefined &&
    Object.entries(spec.expect).every(([type, n]) => (p.counts.get(type) ?? 0) >= n);
  const check = () => {
    if (!syncReported && spec.expect && proxies.every((p) => p.syncedAt > 0)) report("synced");
    if (armed && !convergeReported && proxies.every((p) => p.convergedAt > 0)) report("converged");
  };
  const report = (what: "synced" | "converged") => {
    if (what === "synced") syncReported = true;
    else convergeReported = true;
    emit({
      event: what,
      errors,
      closedSessions,
      closedStreams,
      times: proxies.map((p) => what === "synced" ? p.syncedAt : p.convergedAt),
    });
  };
  for (let k = 0; k < spec.count; k++) {
    if (k % spec.perSession === 0) {
      // Windows as large as HTTP/2 allows: the bench measures meshd, not the client's flow control.
      const session = http2.connect(`http://127.0.0.1:${spec.port}`, {
        settings: { initialWindowSize: 2 ** 31 - 1 },
      });
      session.on("connect", () => session.setLocalWindowSize(2 ** 31 - 1));
      session.on("error", (e: Error) => {
        errors++;
        console.error(`client ${Deno.pid}: connection error: ${e.message}`);
      });
      session.on("goaway", (code: number) => console.error(`client ${Deno.pid}: GOAWAY ${code}`));
      session.on("close", () => closedSessions++);
      sessions.push(session);
    }
    const p: Proxy = { counts: new Map(), syncedAt: 0, policyVersion: "", baseline: "", convergedAt: 0 };
    proxies.push(p);
    const stream = sessions.at(-1)!.request({
      ":method": "POST",
      ":path": "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const reader = new MessageReader();
    stream.on("data", (chunk: Uint8Array) => {
      lastData = Date.now();
      for (const m of reader.push(chunk)) {
        const s = readDelta(m);
        p.counts.set(s.typeUrl, (p.counts.get(s.typeUrl) ?? 0) + s.resources);
        // The probe counts distinct names (a resource can come twice: the connection makes its own
        // workload proxied); the others count resources received, which is cheap and reaches
        // the probe's figure once they hold as much as it.
        if (spec.expect === undefined) {
          for (const r of resourceNames(m, s)) probeNames.add(`${s.typeUrl} ${r.name}`);
        }
        if (s.typeUrl === TYPES[2]) {
          const policy = resourceNames(m, s).find((r) => r.name === POLICY);
          if (policy) {
            p.policyVersion = policy.version;
            if (armed && p.convergedAt === 0 && policy.version !== p.baseline) p.convergedAt = Date.now();
          }
        }
        if (p.syncedAt === 0 && synced(p)) p.syncedAt = Date.now();
        stream.write(deltaRequest({ typeUrl: s.typeUrl, nonce: s.nonce }));
      }
      check();
    });
    stream.on("error", () => errors++);
    stream.on("close", () => closedStreams++);
    const nodeId = spec.nodeId ?? nodeIdOf(spec.first + k);
    stream.write(deltaRequest({ nodeId, typeUrl: TYPES[0] }));
    for (const t of TYPES.slice(1)) stream.write(deltaRequest({ typeUrl: t }));
  }
  if (spec.expect === undefined) {
    const quiet = setInterval(() => {
      if (lastData === 0 || Date.now() - lastData < 1000) return;
      clearInterval(quiet);
      const counts: Record<string, number> = {};
      for (const key of probeNames) {
        const type = key.slice(0, key.indexOf(" "));
        counts[type] = (counts[type] ?? 0) + 1;
      }
      emit({ event: "counts", counts, errors });
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
