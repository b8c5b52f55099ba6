/**
 * Port-forward to a pod through the API server's `pods/portforward` subresource (issue 15, item 1a),
 * as istioctl does to reach istiod: a local TCP listener on 127.0.0.1; each accepted connection opens
 * one WebSocket to `…/pods/<pod>/portforward?ports=<port>` with subprotocol `v4.channel.k8s.io`
 * (binary messages, first byte the channel: 0 data, 1 error; each channel's first message is the port,
 * 2 bytes little-endian). kubectl 1.32 tunnels SPDY inside the WebSocket
 * (`SPDY/3.1+portforward.k8s.io`); the channel protocol is kube-apiserver's other WebSocket protocol.
 *
 * The WebSocket uses the kubeconfig's CA and client certificate through `ApiClient.httpClient()`
 * (Deno's WebSocket takes a `client`) and its credential headers.
 *
 * @module
 */
import type { OrchClient } from "./orch_client.ts";

/** A local forward, open until {@link PortForward.close}. */
export interface PortForward {
  /** `127.0.0.1:<port>` */
  localAddress: string;
  /** Stops listening and ends the forwarded connections. */
  close(): Promise<void>;
}

const PROTOCOL = "v4.channel.k8s.io";

/**
 * Forwards a local port to `port` of pod `namespace/pod`.
 *
 * @throws Error when the local listener cannot be opened (connection errors surface per connection)
 */
export async function openOrchPortForward(
  client: OrchClient,
  namespace: string,
  pod: string,
  port: number,
): Promise<PortForward> {
  const server = client.config.getCurrentCluster()!.server.replace(/^http/, "ws");
  const url = `${server}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}` +
    `/portforward?ports=${port}`;
  const headers = await client.api.headers();
  const httpClient = await client.api.httpClient();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Promise<void>>();
  const sockets = new Set<WebSocket>();
  const accepting = (async () => {
    for await (const conn of listener) {
      const ws = new WebSocket(
        url,
        { protocols: [PROTOCOL], headers, client: httpClient } as WebSocketOptions,
      );
      sockets.add(ws);
      const done = pipe(conn, ws).finally(() => {
        sockets.delete(ws);
        conns.delete(done);
      });
      conns.add(done);
    }
  })().catch(() => {});
  return {
    localAddress: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    async close(): Promise<void> {
      listener.close();
      await accepting;
      for (const ws of sockets) ws.close();
      await Promise.all([...conns]);
    },
  };
}

/** Relays one local connection over one WebSocket until either side ends. */
async function pipe(conn: Deno.Conn, ws: WebSocket): Promise<void> {
  ws.binaryType = "arraybuffer";
  const seen = new Set<number>();
  const closed = new Promise<void>((resolve) => {
    ws.onclose = () => resolve();
    ws.onerror = () => resolve();
  });
  ws.onmessage = (e) => {
    const data = new Uint8Array(e.data as ArrayBuffer);
    const channel = data[0];
    // Each channel's first message is the port number only.
    if (!seen.has(channel)) {
      seen.add(channel);
      return;
    }
    if (channel === 0) conn.write(data.subarray(1)).catch(() => ws.close());
    else ws.close();
  };
  const opened = new Promise<boolean>((resolve) => {
    ws.onopen = () => resolve(true);
    closed.then(() => resolve(false));
  });
  if (await opened) {
    const reading = (async () => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null || ws.readyState !== WebSocket.OPEN) break;
        const msg = new Uint8Array(n + 1);
        msg.set(buf.subarray(0, n), 1);
        ws.send(msg);
      }
      ws.close();
    })();
    await closed;
    closeQuietly(conn);
    await reading.catch(() => {});
  }
  closeQuietly(conn);
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}
