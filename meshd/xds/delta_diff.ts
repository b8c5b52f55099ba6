/**
 * What a delta push sends on one stream for one type: the resources whose version the proxy does not
 * hold, the names it holds that are gone, cut into responses of about {@link CHUNK_BYTES}. Streams
 * that move from the same list to the same list (thousands of proxies of one deployment, every proxy
 * for the Service list) share one diff and one encoding of its responses: only the nonce is spliced
 * in per stream (delta_wire.ts withNonce), so a push costs each stream a copy of bytes, not a diff and
 * an encoding.
 *
 * Protocol: envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol ("Incremental xDS").
 *
 * @module
 */
import type { GeneratedList, GeneratedResource } from "./ads_types.ts";
import { type DeltaResponseParts, encodeDeltaParts, NoncedBytes, resourceEntry } from "./delta_wire.ts";
import { listIndex, listOfIndex, type TypeState, wanted, writableSent } from "./type_state.ts";

/** Target size of one delta response, bytes, by default (grpc-js on Deno's `node:http2`: see deltaUpdate). */
export const CHUNK_BYTES = 8 * 1024;
/**
 * Target size of one delta response on the codec transport, which keeps no per-stream buffer: each
 * response costs a stream a nonce, a write and an ACK (meshd/README.md "Where meshd's CPU goes"), and
 * 128 KiB makes a first sync of 1,000 services (about 220 KiB) 2 responses, not 28. Far below the 4
 * MiB a gRPC client accepts by default (grpc-js, Envoy's Google gRPC client).
 */
export const CODEC_CHUNK_BYTES = 128 * 1024;

/** One response of a delta update. */
export interface DeltaResponse {
  /** Resources it carries, and their bytes (what onSend reports). */
  count: number;
  bytes: number;
  /** The last response of the update: the one whose ACK acknowledges it all. */
  last: boolean;
  /** The response's bytes with a nonce. */
  encode(nonce: string): NoncedBytes;
}

/** A diff of one list against another, encoded: the same for every stream that makes it. */
interface Transition {
  typeUrl: string;
  version: string;
  chunkBytes: number;
  responses: DeltaResponse[];
}

/** Transitions by target list, then by the list the streams held (weakly: old lists may go). */
const FROM_LIST = new WeakMap<GeneratedList, WeakMap<GeneratedList, Transition>>();
/** Transitions by target list from nothing held (a first sync). */
const FROM_NOTHING = new WeakMap<GeneratedList, Transition>();

/**
 * The responses that bring the stream's state to `list`, and `st.sent` updated to what the proxy
 * will hold; an empty array when there is nothing to send. Chunked because the runtime's HTTP/2
 * layer keeps each stream's buffer at the size of its largest write: one 250 KB first sync per proxy
 * would cost 250 KB per proxy for as long as it stays connected.
 *
 * @param version the push context's version (system_version_info)
 * @param answer the update answers a request: explicitly subscribed names that do not exist are
 *   reported as removed, so the proxy stops waiting for them
 * @param chunkBytes target size of one response, octets
 */
export function deltaUpdate(
  st: TypeState,
  list: GeneratedList,
  version: string,
  answer: boolean,
  chunkBytes: number = CHUNK_BYTES,
): DeltaResponse[] {
  // A pure wildcard stream ends up holding exactly the list, so it shares the list's index with
  // every other such stream instead of keeping a map of its own, and its diff with them.
  if (st.wildcard && st.names.size === 0) {
    const held = st.sent.size === 0 ? undefined : listOfIndex(st.sent);
    if (st.sent.size === 0 || held !== undefined) {
      const t = sharedTransition(held, list, st.typeUrl, version, chunkBytes);
      st.sent = listIndex(list);
      return t.responses;
    }
  }
  return ownUpdate(st, list, version, answer, chunkBytes);
}

function sharedTransition(
  from: GeneratedList | undefined,
  to: GeneratedList,
  typeUrl: string,
  version: string,
  chunkBytes: number,
): Transition {
  let byFrom: WeakMap<GeneratedList, Transition> | undefined;
  let t: Transition | undefined;
  if (from === undefined) t = FROM_NOTHING.get(to);
  else {
    byFrom = FROM_LIST.get(to);
    if (!byFrom) FROM_LIST.set(to, byFrom = new WeakMap());
    t = byFrom.get(from);
  }
  if (t && t.typeUrl === typeUrl && t.version === version && t.chunkBytes === chunkBytes) return t;
  const held = from === undefined ? new Map<string, string>() : listIndex(from);
  const changed = to.resources.filter((r) => held.get(r.name) !== r.version);
  const index = listIndex(to);
  const removed = [...held.keys()].filter((name) => !index.has(name));
  t = { typeUrl, version, chunkBytes, responses: responses(typeUrl, version, changed, removed, chunkBytes) };
  if (from === undefined) FROM_NOTHING.set(to, t);
  else byFrom!.set(from, t);
  return t;
}

/** The diff of a stream that holds its own set (a subscription by name, after a NACK, initial versions). */
function ownUpdate(
  st: TypeState,
  list: GeneratedList,
  version: string,
  answer: boolean,
  chunkBytes: number,
): DeltaResponse[] {
  const present = new Set<string>();
  const changed: GeneratedResource[] = [];
  for (const r of list.resources) {
    if (!wanted(st, r.name)) continue;
    present.add(r.name);
    if (st.sent.get(r.name) !== r.version) changed.push(r);
  }
  const removed: string[] = [];
  for (const name of st.sent.keys()) {
    if (!present.has(name)) removed.push(name);
  }
  if (st.wildcard && st.names.size === 0) st.sent = listIndex(list);
  else {
    const sent = writableSent(st);
    for (const r of changed) sent.set(r.name, r.version);
    for (const name of removed) sent.delete(name);
  }
  if (answer) {
    for (const name of st.names) if (!present.has(name) && !removed.includes(name)) removed.push(name);
  }
  return responses(st.typeUrl, version, changed, removed, chunkBytes);
}

/** The resources and removals cut into responses of about `chunkBytes`; none when there is nothing. */
function responses(
  typeUrl: string,
  version: string,
  changed: GeneratedResource[],
  removed: string[],
  chunkBytes: number,
): DeltaResponse[] {
  if (changed.length === 0 && removed.length === 0) return [];
  const out: DeltaResponse[] = [];
  let from = 0;
  while (true) {
    let to = from;
    let bytes = 0;
    while (to < changed.length && (to === from || bytes + changed[to].body.length <= chunkBytes)) {
      bytes += changed[to].body.length;
      to++;
    }
    const last = to >= changed.length;
    const parts = encodeDeltaParts({
      systemVersionInfo: version,
      typeUrl,
      entries: changed.slice(from, to).map((r) => resourceEntry(typeUrl, r)),
      removed: last ? removed : [],
    });
    out.push(response(parts, to - from, bytes, last));
    if (last) return out;
    from = to;
  }
}

function response(parts: DeltaResponseParts, count: number, bytes: number, last: boolean): DeltaResponse {
  return { count, bytes, last, encode: (nonce) => new NoncedBytes(parts, nonce) };
}

/** An update with nothing in it: the answer to a first request when nothing exists for the proxy. */
export function emptyUpdate(typeUrl: string, version: string): DeltaResponse {
  return response(
    encodeDeltaParts({ systemVersionInfo: version, typeUrl, entries: [], removed: [] }),
    0,
    0,
    true,
  );
}
