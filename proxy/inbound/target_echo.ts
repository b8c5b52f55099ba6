/**
 * Test support: an application that answers every request with the request line and the Host
 * values exactly as the bytes arrived, so that a test sees the target and Host the proxy forwarded
 * (httpbin and Deno.serve decode and resolve paths before an application sees them).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import net from "node:net";
import { RawConn, type RawResponse } from "./test_support.ts";

/**
 * Sends one raw request head on its own plain-text connection and reads the response.
 *
 * @param connect where and from where to connect (RawConn.plain's options; default 127.0.0.1)
 */
export async function sendRaw(
  port: number,
  head: string,
  connect: Omit<net.TcpNetConnectOpts, "port"> = {},
): Promise<RawResponse> {
  const c = await RawConn.plain(port, connect);
  try {
    c.write(head);
    return await c.response();
  } finally {
    c.close();
  }
}

/** The target forwarded for a path variant: the expected path and the query as received. */
export function forwardedTarget(target: string, path: string): string {
  const q = target.indexOf("?");
  return q < 0 ? path : path + target.slice(q);
}

/** What the echo application received for one request. */
export interface EchoedRequest {
  /** The name the echo application was started with (which application answered). */
  name: string;
  /** The request line, e.g. `GET /a//b?x HTTP/1.1`. */
  line: string;
  /** The values of every Host field, in order. */
  hosts: string[];
}

/**
 * Parses the body of an echo response.
 *
 * @throws Error when the body is not an echo
 */
export function parseEcho(body: string): EchoedRequest {
  const echoed = JSON.parse(body) as EchoedRequest;
  if (typeof echoed.name !== "string" || typeof echoed.line !== "string" || !Array.isArray(echoed.hosts)) {
    throw new Error(`not an echo: ${body}`);
  }
  return echoed;
}

/** The echo application on 127.0.0.1 (one request per connection, then close). */
export class TargetEcho {
  private constructor(readonly server: net.Server, readonly port: number) {}

  /** @param name included in every answer */
  static async start(name = "echo"): Promise<TargetEcho> {
    const server = net.createServer((socket) => {
      socket.on("error", () => {});
      let head = Buffer.alloc(0);
      socket.on("data", (d: Buffer) => {
        head = Buffer.concat([head, d]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        const lines = head.subarray(0, end).toString("latin1").split("\r\n");
        const hosts = lines.slice(1).filter((l) => /^host:/i.test(l)).map((l) => l.slice(5).trim());
        const body = Buffer.from(JSON.stringify({ name, line: lines[0], hosts }), "latin1");
        socket.end(
          Buffer.concat([
            Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`),
            body,
          ]),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return new TargetEcho(server, (server.address() as net.AddressInfo).port);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
