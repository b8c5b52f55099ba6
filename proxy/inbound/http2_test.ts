/**
 * HTTP/2 on the inbound listener alone, with real curl and python3-hypercorn behind it: which
 * connections become HTTP/2 by the port's protocol and mode (ALPN h2 offered on HTTP2/GRPC ports
 * only, the preface in plain text under PERMISSIVE, also on an HTTP port where the app then gets
 * HTTP/1.1, a reset under STRICT), X-Forwarded-Client-Cert,
 * and the idle timeout of an HTTP/2 connection without streams.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { h2cToolsMissing, run, type ServerProcess, startHypercorn } from "../h2proxy/h2_apps_test_support.ts";
import { PREFACE } from "../../shared/internal/http2/frame.ts";
import type { PortMtls, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import { mtlsFixture, RecordingLog, snapshotOf } from "./test_support.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const fixture = await mtlsFixture(SERVER_ID, CLIENT_ID);
Deno.test.afterAll(() => fixture.files.remove());

/** The workload's snapshot, its port targeted by a service port of `protocol`. */
function snapshot(mode: PortMtls["mode"], appPort: number, protocol: string): RuntimeSnapshot {
  const base = snapshotOf(mode, fixture.cert);
  return {
    ...base,
    services: {
      "foo/echo": serviceInfo({
        name: "echo",
        ports: [{ name: "p", number: 9000, targetPort: appPort, protocol }],
        endpoints: [
          endpointInfo({ workload: "foo/httpbin", ports: { "9000": appPort }, identity: SERVER_ID }),
        ],
      }),
    },
  };
}

async function withInbound(
  app: ServerProcess,
  snap: RuntimeSnapshot,
  fn: (l: InboundListener, stats: InboundStats) => Promise<void>,
  idleTimeoutMs?: number,
): Promise<void> {
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: app.port,
    snapshot: () => snap,
    log: new RecordingLog(),
    connectionLimits: idleTimeoutMs === undefined ? {} : { idleTimeoutMs },
  });
  await listener.start();
  try {
    await fn(listener, listener.observer as InboundStats);
  } finally {
    await listener.close();
  }
}

/** curl: exit code, `%{http_version}` and the app's view of the request (JSON) when it answered. */
async function curl(args: string[]) {
  const r = await run("curl", ["-sS", "--max-time", "10", "-w", "\n%{http_version}", ...args]);
  const nl = r.stdout.lastIndexOf("\n");
  const body = r.stdout.slice(0, nl);
  return {
    code: r.code,
    version: r.stdout.slice(nl + 1),
    seen: body.startsWith("{") ? JSON.parse(body) : null,
  };
}

Deno.test(requires(h2cToolsMissing(), {
  name: "inbound HTTP/2: ALPN h2 on HTTP2 ports only, the preface under PERMISSIVE, a reset under STRICT",
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "h2in-" });
    const app = await startHypercorn(dir);
    const https = (port: number) => [...fixture.mtls, `https://127.0.0.1:${port}/x`];
    try {
      await t.step("HTTP2 port: mutual TLS selects h2, the app sees h2 and this hop's XFCC", async () => {
        await withInbound(app, snapshot("PERMISSIVE", app.port, "HTTP2"), async (l, stats) => {
          const r = await curl(["-H", "x-forwarded-client-cert: By=forged", ...https(l.port)]);
          assert.equal(r.code, 0);
          assert.equal(r.version, "2");
          assert.equal(r.seen.http_version, "2");
          assert.match(
            r.seen.headers["x-forwarded-client-cert"],
            new RegExp(`^By=forged,By=${SERVER_ID};Hash=`),
          );
          const plain = await curl([
            "--http2-prior-knowledge",
            "-H",
            "x-forwarded-client-cert: By=forged",
            `http://127.0.0.1:${l.port}/y`,
          ]);
          assert.equal(plain.version, "2");
          assert.equal(
            plain.seen.headers["x-forwarded-client-cert"],
            undefined,
            "plain text: a client's XFCC is removed",
          );
          assert.equal(stats.snapshot().downstream_cx_http2_total, 2);
        });
      });

      await t.step("HTTP port: no h2 in ALPN; an h2c client gets HTTP/2, the app HTTP/1.1", async () => {
        await withInbound(app, snapshot("PERMISSIVE", app.port, "HTTP"), async (l, stats) => {
          const r = await curl(https(l.port));
          assert.equal(r.code, 0);
          assert.equal(r.version, "1.1");
          assert.equal(r.seen.http_version, "1.1");
          // Envoy's AUTO codec takes the preface (no 505); Istio's inbound cluster speaks HTTP/1.1 to the app.
          const h2 = await curl(["--http2-prior-knowledge", `http://127.0.0.1:${l.port}/y`]);
          assert.equal(h2.code, 0);
          assert.equal(h2.version, "2");
          assert.equal(h2.seen.http_version, "1.1");
          assert.equal(stats.snapshot().downstream_cx_http2_total, 1);
        });
      });

      await t.step("STRICT: an h2c client is reset as a plain-text HTTP/1.1 one is", async () => {
        await withInbound(app, snapshot("STRICT", app.port, "GRPC"), async (l) => {
          const r = await curl(["--http2-prior-knowledge", `http://127.0.0.1:${l.port}/y`]);
          // Reset: curl reports it while receiving (56) or, when its SETTINGS write meets it, sending (55).
          assert.ok(r.code === 56 || r.code === 55, `curl exit ${r.code}: reset`);
          assert.equal((await curl(https(l.port))).version, "2");
        });
      });

      await t.step("an HTTP/2 connection without streams is closed after the idle timeout", async () => {
        await withInbound(app, snapshot("PERMISSIVE", app.port, "HTTP2"), async (l, stats) => {
          const s = net.connect({ host: "127.0.0.1", port: l.port });
          s.on("error", () => {});
          const closed = new Promise<void>((resolve) => s.once("close", () => resolve()));
          s.write(PREFACE);
          s.write(new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]));
          s.resume();
          await within(closed, 5000, "the idle HTTP/2 connection closed");
          assert.equal(stats.snapshot().downstream_cx_idle_timeout, 1);
        }, 500);
      });
    } finally {
      await app.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
