/**
 * The floor of a policy push (README.md "Floor"): a bare grpc-js ADS server on Deno's node:http2, with
 * meshd's gRPC server options, that answers each subscription with one pre-encoded resource and, on
 * `push` on stdin, writes one pre-encoded Authorization response (the bench policy, a new version,
 * the size meshd sends) to every stream and ignores the ACKs. No push context, generator, diff, per-type
 * state or metrics: what it costs per stream is grpc-js's and the runtime's, which meshd cannot go
 * below while it serves ADS through them.
 *
 * Run by floor.ts; prints `{"port":n}` once listening.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { adsProtocol } from "../../../shared/internal/xds/envoy_protos.ts";
import { grpcServerOptions } from "../../../meshd/server/serving/wire.ts";
import {
  type DeltaResponseParts,
  encodeDeltaParts,
  resourceEntry,
  withNonce,
} from "../../../meshd/xds/delta_wire.ts";
import { POLICY, TYPES } from "./client.ts";

// deno-lint-ignore no-explicit-any
type Call = grpc.ServerDuplexStream<any, Uint8Array>;

const encoder = new TextEncoder();
/** A policy body of about the size meshd encodes for the bench policy. */
const body = encoder.encode("x".repeat(160));

/** A response of one resource, encoded once; `withNonce` makes each stream's bytes (as meshd does). */
function response(typeUrl: string, name: string, version: string): DeltaResponseParts {
  return encodeDeltaParts({
    systemVersionInfo: version,
    typeUrl,
    entries: [resourceEntry(typeUrl, { name, version, body })],
    removed: [],
  });
}

const policyStreams: { call: Call; nonce: number }[] = [];
let version = 0;
const service = adsProtocol().service;
const server = new grpc.Server(grpcServerOptions({
  maxStreams: 100_000,
  maxRecvMessageBytes: 4 * 1024 * 1024,
  keepaliveIntervalMs: 30_000,
  keepaliveTimeoutMs: 120_000,
}));
server.addService({
  ...service,
  DeltaAggregatedResources: {
    ...service.DeltaAggregatedResources,
    responseSerialize: (m: unknown) => {
      const b = m as Uint8Array;
      return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    },
  },
}, {
  DeltaAggregatedResources: (call: Call) => {
    const stream = { call, nonce: 0 };
    call.on("data", (req: { typeUrl: string; responseNonce: string }) => {
      if (req.responseNonce) return;
      const policy = req.typeUrl === TYPES[2];
      if (policy) policyStreams.push(stream);
      const name = policy ? POLICY : `bench/${req.typeUrl.slice(req.typeUrl.lastIndexOf(".") + 1)}`;
      call.write(withNonce(response(req.typeUrl, name, `v${version}`), String(++stream.nonce)));
    });
    call.on("error", () => {});
  },
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync(
    "127.0.0.1:0",
    grpc.ServerCredentials.createInsecure(),
    (e, p) => e ? reject(e) : resolve(p),
  )
);
console.log(JSON.stringify({ port }));
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  for (const line of chunk.split("\n")) {
    if (line !== "push") continue;
    version++;
    const parts = response(TYPES[2], POLICY, `v${version}`);
    for (const s of policyStreams) s.call.write(withNonce(parts, String(++s.nonce)));
  }
}
