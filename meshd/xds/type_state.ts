/**
 * Per stream and xDS type, what the ADS server tracks (xDS protocol: subscriptions, ACK/NACK, nonces):
 * the subscription, what the proxy holds once everything sent is acknowledged, and what it last
 * acknowledged; and the name-to-version indexes that streams holding the same list share.
 *
 * @module
 */
import type { TypeSyncStatus } from "../../shared/internal/xds/sync_status.ts";
import type { GeneratedList } from "./ads_types.ts";

/** What one stream tracks for one type: subscription, what was sent, what was acknowledged, nonces. */
export interface TypeState {
  typeUrl: string;
  wildcard: boolean;
  names: Set<string>;
  /** What the proxy holds once everything sent is ACKed: name to version. */
  sent: Map<string, string>;
  /**
   * What the proxy last acknowledged holding. Usually the same Map object as `sent` (copy on write:
   * one map per stream and type in the steady state, which is what 10,000 proxies cost).
   */
  acked: Map<string, string>;
  /** The list version last diffed into `sent`; equal means nothing to send. */
  lastListVersion: string;
  /** The nonce whose ACK or NACK was last counted, so a repeated ACK is not counted twice. */
  lastAnswered: string;
  /** Nonces of the leading chunks of a split update: their ACKs are expected, not stale. */
  chunkNonces: Set<string>;
  /**
   * Why the proxy rejected a leading chunk, until the update's last chunk is answered: the whole
   * update then counts as rejected, whatever the last chunk's answer.
   */
  chunkNack?: string;
  lastSentVersion: string;
  lastSentNonce: string;
  lastAckedVersion: string;
  lastAckedNonce: string;
  lastNack?: string;
  nacks: number;
  pushStartedAt: number;
}

/** A fresh state for a type's first request. */
export function newTypeState(typeUrl: string): TypeState {
  return {
    typeUrl,
    wildcard: false,
    names: new Set(),
    sent: new Map(),
    acked: new Map(),
    lastSentVersion: "",
    lastSentNonce: "",
    lastAckedVersion: "",
    lastAckedNonce: "",
    lastListVersion: "",
    lastAnswered: "",
    chunkNonces: new Set(),
    nacks: 0,
    pushStartedAt: Date.now(),
  };
}

/** The state as /debug/syncz shows it. */
export function syncStatusOf(st: TypeState): TypeSyncStatus {
  return {
    typeUrl: st.typeUrl,
    subscribed: st.wildcard ? "*" : [...st.names].sort(),
    lastSentVersion: st.lastSentVersion,
    lastSentNonce: st.lastSentNonce,
    lastAckedVersion: st.lastAckedVersion,
    lastAckedNonce: st.lastAckedNonce,
    lastNack: st.lastNack,
    nacks: st.nacks,
  };
}

/** Whether the proxy wants `name`: a wildcard subscription, or the name subscribed. */
export function wanted(st: TypeState, name: string): boolean {
  return st.wildcard || st.names.has(name);
}

/** `sent` for mutation: a copy when it is shared (with `acked`, or a list index of many streams). */
export function writableSent(st: TypeState): Map<string, string> {
  if (st.sent === st.acked || INDEX_LISTS.has(st.sent)) st.sent = new Map(st.sent);
  return st.sent;
}

/** Name-to-version maps of generated lists, shared by every stream that holds exactly that list. */
const LIST_INDEXES = new WeakMap<GeneratedList, Map<string, string>>();
/** The list of each shared index: streams holding the same list share their next diff (delta_diff.ts). */
const INDEX_LISTS = new WeakMap<Map<string, string>, GeneratedList>();

/** The name-to-version index of a list, built once and shared by the streams that hold it. */
export function listIndex(list: GeneratedList): Map<string, string> {
  let index = LIST_INDEXES.get(list);
  if (!index) {
    index = new Map(list.resources.map((r) => [r.name, r.version]));
    LIST_INDEXES.set(list, index);
    INDEX_LISTS.set(index, list);
  }
  return index;
}

/** The list whose shared index `sent` is, or undefined for a map of a stream's own. */
export function listOfIndex(sent: Map<string, string>): GeneratedList | undefined {
  return INDEX_LISTS.get(sent);
}

/** Whether a SotW request names the same subscription as the state holds. */
export function sameNames(st: TypeState, names: string[]): boolean {
  const wildcard = names.length === 0 || names.includes("*");
  if (wildcard !== st.wildcard) return false;
  const set = new Set(names.filter((n) => n !== "*"));
  return set.size === st.names.size && [...set].every((n) => st.names.has(n));
}
