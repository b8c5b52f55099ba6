/**
 * What the proxy's tests put on either side of it: the real curl, Debian's httpbin under gunicorn when
 * it is installed, and a small Deno HTTP application for the streaming, chunked and upgrade cases.
 * Tests import it through test_support.ts.
 *
 * @module
 */
import { freePort } from "../../shared/internal/testing/free_port.ts";

/** The result of a curl run. */
export interface CurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real curl (`-sS`, 10 s limit) with the given arguments. */
export async function curl(args: string[], stdin?: Uint8Array): Promise<CurlResult> {
  const cmd = new Deno.Command("curl", {
    args: ["-sS", "--max-time", "10", ...args],
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (stdin) {
    const w = child.stdin.getWriter();
    await w.write(stdin);
    await w.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** httpbin under gunicorn with keep-alive (gthread workers), on 127.0.0.1. */
export class Httpbin {
  private constructor(readonly port: number, readonly child: Deno.ChildProcess) {}

  static async start(): Promise<Httpbin> {
    const port = freePort();
    const child = new Deno.Command("/usr/bin/gunicorn", {
      args: [
        "-b",
        `127.0.0.1:${port}`,
        "-k",
        "gthread",
        "--threads",
        "8",
        "--keep-alive",
        "30",
        "httpbin:app",
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/get`);
        await r.body?.cancel();
        if (r.ok) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        await child.status;
        throw new Error("httpbin did not start");
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return new Httpbin(port, child);
  }

  async stop(): Promise<void> {
    this.child.kill("SIGTERM");
    await this.child.status;
  }
}

/** A small Deno HTTP application for the streaming, chunked and upgrade cases. */
export class TestApp {
  /** Remote ports of the connections requests came on (the proxy's upstream connections). */
  readonly remotePorts: number[] = [];
  /** Request headers of the last request. */
  lastHeaders: Headers = new Headers();
  /** /gate waits for this before its second part. */
  gate: PromiseWithResolvers<void> = Promise.withResolvers();
  /** /upload resolves this when the first body chunk arrived. */
  firstChunk: PromiseWithResolvers<void> = Promise.withResolvers();
  /** /upload requests whose body ended early (the proxy reset the connection): the app stopped waiting. */
  uploadsCut = 0;
  readonly server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (req, info) => this.#handle(req, info),
    );
  }

  get port(): number {
    return this.server.addr.port;
  }

  async #handle(req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> {
    this.remotePorts.push(info.remoteAddr.port);
    this.lastHeaders = req.headers;
    const url = new URL(req.url);
    const enc = new TextEncoder();
    switch (url.pathname) {
      case "/headers":
        return Response.json({ headers: Object.fromEntries(req.headers) });
      case "/echo":
        return new Response(req.body, {
          headers: {
            "x-request-transfer-encoding": req.headers.get("transfer-encoding") ?? "",
            "x-request-content-length": req.headers.get("content-length") ?? "",
          },
        });
      case "/gate": {
        const gate = this.gate.promise;
        return new Response(
          new ReadableStream({
            async start(c) {
              c.enqueue(enc.encode("first\n"));
              await gate;
              c.enqueue(enc.encode("second\n"));
              c.close();
            },
          }),
        );
      }
      case "/stream":
        return new Response(
          new ReadableStream({
            start(c) {
              for (let i = 0; i < 5; i++) c.enqueue(enc.encode(`part ${i}\n`));
              c.close();
            },
          }),
        );
      case "/upload": {
        let n = 0;
        let first = true;
        try {
          for await (const chunk of req.body!) {
            n += chunk.length;
            if (first) {
              first = false;
              this.firstChunk.resolve();
            }
          }
        } catch {
          this.uploadsCut++;
          return new Response("body cut", { status: 500 });
        }
        return new Response(String(n));
      }
      case "/big": {
        const n = Number(url.searchParams.get("n") ?? "1048576");
        return new Response(new Uint8Array(n).fill(0x61));
      }
      case "/ws": {
        const { socket, response } = Deno.upgradeWebSocket(req);
        socket.onmessage = (e) => socket.send(typeof e.data === "string" ? `echo: ${e.data}` : e.data);
        return response;
      }
      default:
        return new Response("not found", { status: 404 });
    }
  }

  stop(): Promise<void> {
    return this.server.shutdown();
  }
}
