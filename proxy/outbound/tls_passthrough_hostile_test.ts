/**
 * The gateway's PASSTHROUGH port against raw bytes and large transfers: what is not a whole TLS
 * ClientHello is reset without an upstream connection (Envoy: no filter chain matches), a ClientHello
 * that never completes is closed by the request-headers timeout, and a client's TLS stream of several
 * MiB passes byte for byte inside the mesh's mutual TLS.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { RawConn } from "../inbound/test_support.ts";
import { curl } from "../inbound/test_support.ts";
import type { OutboundStats } from "./outbound_stats.ts";
import { appCaFile, PASSTHROUGH, withListener, withWorld } from "./tls_passthrough_test_support.ts";

const routes = { [PASSTHROUGH.name]: PASSTHROUGH };

Deno.test("gateway PASSTHROUGH, raw bytes: HTTP, a handshake that is not a ClientHello, an oversized record: reset, no upstream", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    await withListener(() => ({ ...snapshot, routes }), log, [PASSTHROUGH.name], async (port, listener) => {
      const oversized = new Uint8Array(20_000).fill(1);
      oversized.set([0x16, 0x03, 0x01, 0xff, 0xff, 0x01]);
      const inputs: [string, Uint8Array][] = [
        ["plain HTTP", new TextEncoder().encode("GET / HTTP/1.1\r\nHost: nginx.example.com\r\n\r\n")],
        // A complete handshake record whose message is a ServerHello (type 2).
        ["not a ClientHello", new Uint8Array([0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00])],
        ["a record beyond the largest TLS record", oversized],
      ];
      for (const [name, bytes] of inputs) {
        const c = await RawConn.plain(port);
        c.socket.write(bytes);
        assert.ok(await c.closed(), `${name}: closed`);
        await assert.rejects(c.bytes(1, 100), /connection ended/, `${name}: no answer`);
      }
      assert.deepEqual(seen, [], "no upstream connection was made");
      assert.equal((listener.observer as OutboundStats).snapshot().no_filter_chain_match, inputs.length);
    });
  });
});

Deno.test("gateway PASSTHROUGH, raw bytes: a ClientHello that never completes is closed by the headers timeout", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    await withListener(() => ({ ...snapshot, routes }), log, [PASSTHROUGH.name], async (port) => {
      const c = await RawConn.plain(port);
      // A record header announcing 512 bytes, and 3 of them.
      c.socket.write(new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01]));
      const started = Date.now();
      assert.ok(await c.closed(5000), "closed");
      const took = Date.now() - started;
      assert.ok(took >= 250 && took < 4000, `closed after ${took} ms (timeout 300 ms)`);
      assert.deepEqual(seen, []);
    }, { requestHeadersTimeoutMs: 300 });
  });
});

Deno.test("gateway PASSTHROUGH: 8 MiB of the client's TLS pass byte for byte inside mutual TLS", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    await withListener(() => ({ ...snapshot, routes }), log, [PASSTHROUGH.name], async (port) => {
      const body = new Uint8Array(8 << 20);
      for (let i = 0; i < body.length; i += 65536) crypto.getRandomValues(body.subarray(i, i + 65536));
      const file = await Deno.makeTempFile();
      try {
        await Deno.writeFile(file, body);
        const r = await curl([
          "--cacert",
          appCaFile,
          "--resolve",
          `nginx.example.com:${port}:127.0.0.1`,
          "--data-binary",
          `@${file}`,
          `https://nginx.example.com:${port}/`,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, createHash("sha256").update(body).digest("hex"));
        assert.equal(seen.length, 1, "over the mesh's mutual TLS");
      } finally {
        await Deno.remove(file);
      }
    });
  });
});
