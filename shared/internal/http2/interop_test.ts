/**
 * Real HTTP/2 software against the codec: curl, nghttp and h2load (nghttp2-client) against the echo
 * server (server role), and the client role against nghttpd (nghttp2-server).
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { processDeadline, within } from "../testing/deadline.ts";
import { commandMissing, requires } from "../testing/prerequisites.ts";
import { freePort } from "../testing/free_port.ts";
import { bodyText, connectClient, get } from "./connection_test_support.ts";
import { startEchoServer } from "./echo_test_support.ts";
import { headerValue } from "./headers.ts";

async function run(
  cmd: string,
  args: string[],
  ms = 30_000,
): Promise<{ code: number; out: string; err: string }> {
  const deadline = processDeadline(ms, `${cmd} ${args.join(" ")}`);
  const r = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", signal: deadline.signal })
    .output();
  deadline.end();
  const d = new TextDecoder();
  return { code: r.code, out: d.decode(r.stdout), err: d.decode(r.stderr) };
}

Deno.test(requires(commandMissing("curl"), {
  name: "interop: curl --http2-prior-knowledge GET and POST",
  async fn() {
    const server = await startEchoServer();
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const g = await run("curl", [
        "-sS",
        "--http2-prior-knowledge",
        "-w",
        "%{http_version} %{http_code}",
        `${url}/a`,
      ]);
      assert.equal(g.out, "hello /a\n2 200", g.err);
      const p = await run("curl", [
        "-sS",
        "--http2-prior-knowledge",
        "--data-binary",
        "@/etc/services",
        `${url}/p`,
      ]);
      assert.equal(p.out, await Deno.readTextFile("/etc/services"), p.err);
      assert.deepEqual(server.log, []);
    } finally {
      await server.close();
    }
  },
}));

Deno.test(requires(commandMissing("nghttp"), {
  name: "interop: nghttp, 10 concurrent streams with bodies, then a clean GOAWAY",
  async fn() {
    const server = await startEchoServer();
    try {
      const urls = Array.from({ length: 10 }, (_, i) => `http://127.0.0.1:${server.port}/s${i}`);
      const r = await run("nghttp", ["-nv", "-d", "/etc/services", ...urls]);
      assert.equal(r.code, 0, r.err);
      assert.equal((r.out.match(/recv \(stream_id=\d+\) :status: 200/g) ?? []).length, 10, r.out);
      assert.match(r.out, /send GOAWAY frame .*\n.*error_code=NO_ERROR/);
      assert.doesNotMatch(r.out, /RST_STREAM|PROTOCOL_ERROR/);
    } finally {
      await server.close();
    }
  },
}));

Deno.test(requires(commandMissing("h2load"), {
  name: "interop: h2load, 4,000 requests on 4 connections, 10 streams each",
  async fn() {
    const server = await startEchoServer();
    try {
      const r = await run("h2load", [
        "-n",
        "4000",
        "-c",
        "4",
        "-m",
        "10",
        `http://127.0.0.1:${server.port}/`,
      ]);
      assert.match(
        r.out,
        /requests: 4000 total, 4000 started, 4000 done, 4000 succeeded, 0 failed, 0 errored/,
        r.out,
      );
      const post = await run("h2load", [
        "-n",
        "200",
        "-c",
        "2",
        "-m",
        "5",
        "-d",
        "/etc/services",
        `http://127.0.0.1:${server.port}/`,
      ]);
      assert.match(post.out, /200 succeeded, 0 failed, 0 errored/, post.out);
    } finally {
      await server.close();
    }
  },
}));

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, "127.0.0.1", () => (c.destroy(), resolve(true)));
      c.on("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on ${port}`);
}

Deno.test(requires(commandMissing("nghttpd"), {
  name: "interop: the client role against nghttpd (h2c): files of 1 MiB on 20 streams, 404, HEAD",
  async fn() {
    const dir = await Deno.makeTempDir();
    const big = new Uint8Array(1024 * 1024).map((_, i) => (i * 7) % 256);
    await Deno.writeFile(`${dir}/big`, big);
    const port = freePort();
    const nghttpd = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-d", dir, String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const { conn } = await connectClient(port);
      const streams = Array.from({ length: 20 }, () => conn.request(get("/big"), { endStream: true }));
      for (const s of streams) {
        assert.equal(headerValue(await within(s.response, 10_000, "nghttpd response"), ":status"), "200");
        let n = 0;
        let same = true;
        for await (const c of s) {
          for (let i = 0; i < c.length; i++) if (c[i] !== big[n + i]) same = false;
          n += c.length;
        }
        assert.equal(n, big.length);
        assert.ok(same);
      }
      const missing = conn.request(get("/nope"), { endStream: true });
      assert.equal(headerValue(await missing.response, ":status"), "404");
      await bodyText(missing);
      const head = conn.request(get("/big", "HEAD"), { endStream: true });
      assert.equal(headerValue(await head.response, "content-length"), String(big.length));
      assert.equal(await bodyText(head), "");
      conn.close();
      await within(conn.closed, 5000, "client close");
    } finally {
      nghttpd.kill();
      await nghttpd.status;
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
