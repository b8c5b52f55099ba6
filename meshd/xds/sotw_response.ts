/**
 * What a state-of-the-world push sends on one stream for one type: every resource it subscribes to,
 * in one DiscoveryResponse. Streams with a wildcard subscription to the same list send the same
 * response: it is encoded once per list and push context and only the nonce is spliced in per stream
 * (delta_wire.ts withNonce), as the delta path does (delta_diff.ts).
 *
 * Protocol: envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol ("State of the world").
 *
 * @module
 */
import type { GeneratedList } from "./ads_types.ts";
import { type DeltaResponseParts, encodeSotwParts, NoncedBytes } from "./delta_wire.ts";
import { listIndex, type TypeState, wanted } from "./type_state.ts";

/** A response: its resources, their bytes, and its wire form given a nonce. */
export interface SotwResponse {
  count: number;
  bytes: number;
  encode(nonce: string): NoncedBytes;
}

const WILDCARD = new WeakMap<GeneratedList, { typeUrl: string; version: string; response: SotwResponse }>();

/** The response that gives the stream `list`, with `st.sent` set to what the proxy will hold. */
export function sotwResponse(st: TypeState, list: GeneratedList, version: string): SotwResponse {
  if (st.wildcard) {
    st.sent = listIndex(list);
    const hit = WILDCARD.get(list);
    if (hit && hit.typeUrl === st.typeUrl && hit.version === version) return hit.response;
    const response = encoded(st.typeUrl, version, list.resources);
    WILDCARD.set(list, { typeUrl: st.typeUrl, version, response });
    return response;
  }
  const chosen = list.resources.filter((r) => wanted(st, r.name));
  st.sent = new Map(chosen.map((r) => [r.name, r.version]));
  return encoded(st.typeUrl, version, chosen);
}

function encoded(typeUrl: string, versionInfo: string, resources: GeneratedList["resources"]): SotwResponse {
  const parts: DeltaResponseParts = encodeSotwParts({ versionInfo, typeUrl, resources });
  return {
    count: resources.length,
    bytes: resources.reduce((n, r) => n + r.body.length, 0),
    encode: (nonce) => new NoncedBytes(parts, nonce),
  };
}
