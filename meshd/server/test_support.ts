/**
 * Test support: a running discovery server on a temp config directory, and a real delta ADS client
 * that ACKs everything and keeps what it holds.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { decodeResource, RESOURCE_TYPES, type ValidationIssue } from "../../shared/mod.ts";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";
import { TYPE_URLS } from "../xds/generators.ts";
import { jsonToStruct } from "../../shared/internal/xds/struct.ts";
import { DiscoveryServer, type DiscoveryServerOptions } from "./discovery_server.ts";

// deno-lint-ignore no-explicit-any
export type Msg = Record<string, any>;

export const SERVICE = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: 8080, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: sleep-1, namespace: foo}
spec: {address: 10.1.0.3, labels: {app: sleep}, serviceAccount: sleep}
`;
export const STRICT = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;

/** A delta ADS client that ACKs everything and keeps what it holds per type. */
export class Proxy {
  readonly held = new Map<string, Map<string, Msg>>();
  readonly #waiters: (() => void)[] = [];
  readonly call: grpc.ClientDuplexStream<Msg, Msg>;
  readonly nodeId: string;
  constructor(readonly client: grpc.Client, node: Msg, types: string[]) {
    this.nodeId = node.id;
    this.call = (client as Msg).DeltaAggregatedResources();
    this.call.on("data", (m: Msg) => {
      const held = this.held.get(m.typeUrl) ?? new Map();
      for (const r of m.resources) held.set(r.name, r.resource);
      for (const name of m.removedResources) held.delete(name);
      this.held.set(m.typeUrl, held);
      this.call.write({ typeUrl: m.typeUrl, responseNonce: m.nonce });
      this.#waiters.splice(0).forEach((w) => w());
    });
    this.call.on("error", () => {});
    for (const [i, typeUrl] of types.entries()) this.call.write(i === 0 ? { node, typeUrl } : { typeUrl });
  }
  decoded(typeUrl: string, type: keyof typeof RESOURCE_TYPES, name: string): Msg | undefined {
    const any = this.held.get(typeUrl)?.get(name);
    return any ? decodeResource(RESOURCE_TYPES[type], any.value) : undefined;
  }
  /** Waits until the condition holds, up to the timeout; returns how long it took. */
  async until(cond: () => boolean, timeoutMs: number): Promise<number> {
    const start = Date.now();
    while (!cond()) {
      const left = timeoutMs - (Date.now() - start);
      if (left <= 0) throw new Error(`condition not met within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 50));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return Date.now() - start;
  }
}

export async function withDiscovery(
  fn: (ctx: {
    dir: string;
    server: DiscoveryServer;
    connect: (ns: string, name: string, node?: Msg) => Proxy;
    rejected: ValidationIssue[];
    /** The plain-text ADS port. */
    port: number;
  }) => Promise<void>,
  extra: Partial<DiscoveryServerOptions> = {},
): Promise<void> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const rejected: ValidationIssue[] = [];
  const server = new DiscoveryServer({
    configDir: dir,
    grpcAddr: "127.0.0.1:0",
    debounceAfterMs: 100,
    logger: { info() {}, warn() {}, error() {} },
    ...extra,
    onRejected: (i) => {
      rejected.push(i);
      extra.onRejected?.(i);
    },
  });
  const { grpcPort } = await server.start();
  const clients: grpc.Client[] = [];
  try {
    await fn({
      dir,
      server,
      rejected,
      port: grpcPort,
      connect: (ns, name, node) => {
        const client = new (adsProtocol().client)(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
        clients.push(client);
        return new Proxy(
          client,
          node
            ? { ...node, metadata: jsonToStruct(node.metadata ?? {}) }
            : { id: `sidecar~10.1.0.9~${name}.${ns}~${ns}.svc.cluster.local` },
          [
            TYPE_URLS.workload,
            TYPE_URLS.service,
            TYPE_URLS.authorization,
          ],
        );
      },
    });
  } finally {
    await server.stop(200);
    for (const c of clients) c.close();
    await Deno.remove(dir, { recursive: true });
  }
}
