import assert from "node:assert/strict";
import { forwardedFor, type ForwardedForInput, gatewayForwardedProto } from "./forwarded_for.ts";

const PEER = "192.0.2.5";
const LOCAL = "10.0.0.2";

interface Row {
  name: string;
  values: string[];
  gateway: boolean;
  hops?: number;
  peer?: string;
  remoteIp: string;
  forwardedFor: string | null;
}

// Envoy's documented examples 1-4 (x-forwarded-for section), then what a hostile client may send.
const rows: Row[] = [
  {
    name: "Envoy example 1: edge, no trusted hop: XFF ignored, peer appended",
    values: ["203.0.113.128, 203.0.113.10, 203.0.113.1"],
    gateway: true,
    remoteIp: PEER,
    forwardedFor: `203.0.113.128, 203.0.113.10, 203.0.113.1,${PEER}`,
  },
  {
    name: "Envoy example 2: internal (sidecar): last XFF entry trusted, XFF unchanged",
    values: ["203.0.113.128, 203.0.113.10, 203.0.113.1, 192.0.2.5"],
    gateway: false,
    peer: "10.11.12.13",
    remoteIp: "192.0.2.5",
    forwardedFor: null,
  },
  {
    name: "Envoy example 3: edge with two trusted hops: 2nd from the right before appending",
    values: ["203.0.113.128, 203.0.113.10, 203.0.113.1"],
    gateway: true,
    hops: 2,
    remoteIp: "203.0.113.10",
    forwardedFor: `203.0.113.128, 203.0.113.10, 203.0.113.1,${PEER}`,
  },
  {
    name: "sidecars ignore numTrustedProxies (Istio sets no hops there)",
    values: ["203.0.113.128, 203.0.113.10"],
    gateway: false,
    hops: 2,
    remoteIp: "203.0.113.10",
    forwardedFor: null,
  },
  { name: "no XFF at a gateway", values: [], gateway: true, remoteIp: PEER, forwardedFor: PEER },
  { name: "no XFF at a sidecar", values: [], gateway: false, remoteIp: PEER, forwardedFor: null },
  {
    name: "spoofed XFF with no trusted hop: peer",
    values: ["6.6.6.6"],
    gateway: true,
    remoteIp: PEER,
    forwardedFor: `6.6.6.6,${PEER}`,
  },
  {
    name: "one trusted hop takes the entry the trusted proxy appended, not the client's",
    values: ["6.6.6.6, 7.7.7.7, 198.51.100.7"],
    gateway: true,
    hops: 1,
    remoteIp: "198.51.100.7",
    forwardedFor: `6.6.6.6, 7.7.7.7, 198.51.100.7,${PEER}`,
  },
  {
    name: "fewer entries than trusted hops: peer",
    values: ["6.6.6.6"],
    gateway: true,
    hops: 2,
    remoteIp: PEER,
    forwardedFor: `6.6.6.6,${PEER}`,
  },
  {
    name: "several XFF fields are joined with `,` (Envoy), empty ones dropped",
    values: ["6.6.6.6", "", "198.51.100.7"],
    gateway: true,
    hops: 1,
    remoteIp: "198.51.100.7",
    forwardedFor: `6.6.6.6,198.51.100.7,${PEER}`,
  },
  {
    name: "an empty entry counts as an entry and is not an address: peer",
    values: ["198.51.100.7,,"],
    gateway: true,
    hops: 1,
    remoteIp: PEER,
    forwardedFor: `198.51.100.7,,,${PEER}`,
  },
  {
    name: "garbage at the trusted position: peer",
    values: ["198.51.100.7, not-an-ip"],
    gateway: true,
    hops: 1,
    remoteIp: PEER,
    forwardedFor: `198.51.100.7, not-an-ip,${PEER}`,
  },
  {
    name: "an address with a port is not an address",
    values: ["198.51.100.7:443"],
    gateway: true,
    hops: 1,
    remoteIp: PEER,
    forwardedFor: `198.51.100.7:443,${PEER}`,
  },
  {
    name: "IPv6 entries are addresses; brackets are not",
    values: ["[2001:db8::1], 2001:db8::2"],
    gateway: true,
    hops: 1,
    remoteIp: "2001:db8::2",
    forwardedFor: `[2001:db8::1], 2001:db8::2,${PEER}`,
  },
  {
    name: "bracketed IPv6 at the trusted position: peer",
    values: ["[2001:db8::1]"],
    gateway: true,
    hops: 1,
    remoteIp: PEER,
    forwardedFor: `[2001:db8::1],${PEER}`,
  },
  {
    name: "sidecar: garbage last entry falls back to the peer",
    values: ["6.6.6.6, garbage"],
    gateway: false,
    remoteIp: PEER,
    forwardedFor: null,
  },
  {
    name: "sidecar: several fields, the last one's entry",
    values: ["6.6.6.6", "198.51.100.7"],
    gateway: false,
    remoteIp: "198.51.100.7",
    forwardedFor: null,
  },
  {
    name: "a loopback peer appends the listener's address (Envoy), and is the client address",
    values: [],
    gateway: true,
    peer: "127.0.0.1",
    remoteIp: "127.0.0.1",
    forwardedFor: LOCAL,
  },
  {
    name: "IPv6 loopback peer too",
    values: ["6.6.6.6"],
    gateway: true,
    peer: "::1",
    remoteIp: "::1",
    forwardedFor: `6.6.6.6,${LOCAL}`,
  },
  {
    name: "leading zeros are not an IPv4 address",
    values: ["010.0.0.1"],
    gateway: false,
    remoteIp: PEER,
    forwardedFor: null,
  },
];

for (const row of rows) {
  Deno.test(`forwardedFor: ${row.name}`, () => {
    const input: ForwardedForInput = {
      values: row.values,
      peerIp: row.peer ?? PEER,
      localIp: LOCAL,
      useRemoteAddress: row.gateway,
      numTrustedProxies: row.hops ?? 0,
    };
    assert.deepEqual(forwardedFor(input), { remoteIp: row.remoteIp, forwardedFor: row.forwardedFor });
  });
}

Deno.test("gatewayForwardedProto: the connection's scheme unless a trusted hop sent one (Envoy)", () => {
  assert.equal(gatewayForwardedProto("https", false, 0), "http", "a client's claim is overwritten");
  assert.equal(gatewayForwardedProto(undefined, true, 0), "https");
  assert.equal(gatewayForwardedProto("https", false, 1), null, "kept from a trusted hop");
  assert.equal(gatewayForwardedProto(undefined, false, 1), "http", "added when absent");
});
