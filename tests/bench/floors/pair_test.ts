/**
 * Smoke test of the proxy pair bench's floors (not timed): bytes pass through each floor pair both ways,
 * and the node:tls floor's server side refuses a client without a certificate, as the mesh's server
 * proxy does (so that this floor is a mutual-TLS floor, not a cheaper one).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa } from "../../integration/meshd_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { BenchRun } from "../pair_support.ts";
import { FLOOR_KINDS, startFloorPair } from "./pair.ts";

/** An echo app on 127.0.0.1: every byte read is written back. */
function echoApp(): { port: number; close: () => Promise<void> } {
  const port = freePort();
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  const conns = new Set<Deno.Conn>();
  const serving = (async () => {
    const tasks: Promise<void>[] = [];
    for await (const conn of listener) {
      conns.add(conn);
      tasks.push(conn.readable.pipeTo(conn.writable).catch(() => {}).finally(() => conns.delete(conn)));
    }
    await Promise.all(tasks);
  })();
  return {
    port,
    close: async () => {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // Closed by its pipe already.
        }
      }
      await serving;
    },
  };
}

/** Sends `payload` to 127.0.0.1:`port` and reads until as many bytes came back (or the peer closed). */
async function roundTrip(port: number, payload: Uint8Array): Promise<Uint8Array> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const writing = (async () => {
      for (let off = 0; off < payload.length;) off += await conn.write(payload.subarray(off));
    })();
    const got = new Uint8Array(payload.length);
    let have = 0;
    while (have < payload.length) {
      const n = await conn.read(got.subarray(have));
      if (n === null) break;
      have += n;
    }
    await writing;
    return got.subarray(0, have);
  } finally {
    conn.close();
  }
}

Deno.test(requires(commandMissing("openssl"), {
  name:
    "floors: bytes pass through the node:tls and Deno-TLS pairs; node:tls refuses a client without a cert",
  async fn(t) {
    const bench = await BenchRun.start("floors-test-");
    const ca = await startCa(join(bench.dir, "ca"));
    bench.cleanups.push(() => ca.stop());
    const rootPem = join(bench.dir, "root-cert.pem");
    await Deno.writeTextFile(rootPem, ca.trustBundlePem);
    const app = echoApp();
    try {
      // 300 KiB: more than one read buffer and one TLS record each way.
      const payload = new Uint8Array(300 * 1024).map((_, i) => i % 251);
      for (const kind of FLOOR_KINDS) {
        await t.step(kind, async () => {
          const pair = await startFloorPair(bench, kind, { ca, rootPem, appPort: app.port, v8Flags: "" });
          const back = await within(roundTrip(pair.clientPort, payload), 15_000, `${kind} round trip`);
          assert.equal(
            back.length,
            payload.length,
            `${kind}: ${back.length} of ${payload.length} bytes back`,
          );
          assert.deepEqual(back, payload);
          if (kind === "node_tls") {
            // No client certificate: the handshake may finish (TLS 1.3), but no byte reaches the app.
            const noCert = (async () => {
              const conn = await Deno.connectTls({
                hostname: "127.0.0.1",
                port: pair.serverPort,
                caCerts: [ca.trustBundlePem],
                unsafelyDisableHostnameVerification: true,
              });
              try {
                await conn.write(new TextEncoder().encode("no certificate\n"));
                return await conn.read(new Uint8Array(64));
              } catch {
                return null;
              } finally {
                conn.close();
              }
            })();
            assert.equal(await within(noCert, 15_000, "client without a certificate"), null);
          }
        });
      }
    } finally {
      await app.close();
      await bench.close();
    }
  },
}));
