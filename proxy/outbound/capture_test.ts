/**
 * Transparent capture end to end in a network namespace (root): the outbound listener in sidecar
 * mode (./capture_test_support.ts, run with gid 1337, which the namespace's REDIRECT leaves alone)
 * and real clients (python3 sockets, curl) whose connections iptables REDIRECTs to it.
 */
import assert from "node:assert/strict";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { captureNetns, mustRun, netnsMissing, roundTrip } from "../capture/netns_test_support.ts";
import { ALLOW_FFI_FLAG } from "../capture/libc.ts";
import { type CaptureProxy, curl, withCaptureProxy } from "./capture_proxy_test_support.ts";

async function withProxy(
  n: number,
  flags: string[],
  policy: string,
  fn: (exec: string[], p: CaptureProxy) => Promise<void>,
): Promise<string> {
  return await withCaptureProxy(await captureNetns(n, 15001, 1337), flags, [String(n), policy], fn);
}

/** Raw bytes to an address; what came back before the close. */
async function raw(exec: string[], host: string, port: number, bytes: string): Promise<string> {
  const py = `import socket,sys
s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=5)
s.sendall(sys.argv[3].encode()); s.shutdown(socket.SHUT_WR)
b=b""
try:
    while True:
        c=s.recv(65536)
        if not c: break
        b+=c
except OSError as e:
    b+=("<"+e.__class__.__name__+">").encode()
print(b.decode(errors="replace"))`;
  return await mustRun(exec[0], [
    ...exec.slice(1),
    "timeout",
    "10",
    "/usr/bin/python3",
    "-c",
    py,
    host,
    String(port),
    bytes,
  ]);
}

const MiB = 1 << 20;

Deno.test(requires(netnsMissing(), {
  name:
    "capture: a TCP service by VIP byte for byte with half-close, passthrough, HTTP by Host, no loop, tcp stats",
  async fn() {
    await withProxy(4, [ALLOW_FFI_FLAG], "ALLOW_ANY", async (exec, proxy) => {
      // (a) TCP service by its VIP: 4 MiB each way, the echo ends after the client's FIN.
      const a = await roundTrip(exec, "10.221.4.10", 9000, 4 * MiB);
      assert.deepEqual(a, { sent: 4 * MiB, got: 4 * MiB, same: true, error: null });
      // (b) a destination in no service: passed through to it, in plain text.
      const b = await roundTrip(exec, "10.221.4.1", 7000, MiB);
      assert.deepEqual(b, { sent: MiB, got: MiB, same: true, error: null });
      // (c) HTTP by Host, as before capture.
      assert.equal(await curl(exec, "http://10.221.4.11/x"), "web GET /x 200");
      // The listener itself at the workload's own address: the HTTP path (a 400 for these bytes),
      // never passed through to itself.
      assert.match(await raw(exec, "10.221.4.1", 15001, "not http\r\n\r\n"), /^HTTP\/1\.1 400 /);
      const s = await proxy.stats();
      assert.equal(s.echo, 1);
      assert.equal(s.passthrough, 1);
      const c = s.counters;
      assert.equal(c["tcp.outbound|9000||echo.a.svc.cluster.local.downstream_cx_total"], 1);
      assert.equal(c["tcp.outbound|9000||echo.a.svc.cluster.local.downstream_cx_rx_bytes_total"], 4 * MiB);
      assert.equal(c["tcp.outbound|9000||echo.a.svc.cluster.local.downstream_cx_tx_bytes_total"], 4 * MiB);
      assert.equal(c["tcp.PassthroughCluster.downstream_cx_total"], 1);
      assert.equal(c.upstream_cx_plaintext_total, 3);
    });
  },
}));

Deno.test(requires(netnsMissing(), {
  name: "capture: TCP to a proxied endpoint over mutual TLS with secure naming; an impostor is refused",
  async fn() {
    const log = await withProxy(7, [ALLOW_FFI_FLAG], "ALLOW_ANY", async (exec, proxy) => {
      const a = await roundTrip(exec, "10.221.7.12", 9000, 2 * MiB);
      assert.deepEqual(a, { sent: 2 * MiB, got: 2 * MiB, same: true, error: null });
      // The endpoint presents .../sa/other where the registry says .../sa/secure: no byte reaches it.
      const b = await roundTrip(exec, "10.221.7.13", 9000, 1000);
      assert.equal(b.got, 0);
      const s = await proxy.stats();
      // Both servers saw the client's workload certificate (the impostor's handshake completed; the
      // proxy refused it after checking its SAN, before relaying a byte).
      assert.equal(s.peers.filter((p) => p.includes("URI:spiffe://cluster.local/ns/a/sa/client")).length, 2);
      assert.equal(s.counters.upstream_cx_mtls_total, 2);
      assert.equal(s.counters["tcp.outbound|9000||impostor.a.svc.cluster.local.upstream_cx_connect_fail"], 1);
      assert.equal(
        s.counters["tcp.outbound|9000||secure.a.svc.cluster.local.downstream_cx_rx_bytes_total"],
        2 * MiB,
      );
    });
    assert.match(
      log,
      /upstream identity mismatch at 10\.221\.7\.1:9444: expected spiffe:\/\/cluster\.local\/ns\/a\/sa\/secure/,
    );
  },
}));

Deno.test(requires(netnsMissing(), {
  name:
    "capture: automatic mTLS dials plain text to a proxied endpoint whose server is DISABLE (TCP, HTTP/1.1, h2c)",
  async fn() {
    await withProxy(8, [ALLOW_FFI_FLAG], "ALLOW_ANY", async (exec, proxy) => {
      const a = await roundTrip(exec, "10.221.8.15", 9000, MiB);
      assert.deepEqual(a, { sent: MiB, got: MiB, same: true, error: null });
      assert.equal(await curl(exec, "http://10.221.8.16/d"), "web GET /d 200");
      assert.equal(await curl(exec, "http://10.221.8.17/d", "--http2-prior-knowledge"), "hello /d\n 200");
      const s = await proxy.stats();
      assert.equal(s.echo, 1);
      assert.equal(s.counters.upstream_cx_plaintext_total, 3);
      assert.equal(s.counters.upstream_cx_mtls_total ?? 0, 0);
      assert.deepEqual(s.peers, [], "no mutual TLS server was dialled");
    });
  },
}));

Deno.test(requires(netnsMissing(), {
  name:
    "capture: REGISTRY_ONLY closes a destination outside the registry (BlackHoleCluster); services still work",
  async fn() {
    const log = await withProxy(5, [ALLOW_FFI_FLAG], "REGISTRY_ONLY", async (exec, proxy) => {
      const b = await roundTrip(exec, "10.221.5.1", 7000, 1000);
      assert.equal(b.got, 0);
      const a = await roundTrip(exec, "10.221.5.10", 9000, 1000);
      assert.deepEqual(a, { sent: 1000, got: 1000, same: true, error: null });
      const s = await proxy.stats();
      assert.equal(s.passthrough, 0, "the passthrough server was never reached");
      assert.equal(s.counters["tcp.BlackHoleCluster.downstream_cx_total"], 1);
    });
    assert.match(log, /destination not in the service registry \(outboundTrafficPolicy REGISTRY_ONLY\)/);
  },
}));

Deno.test(requires(netnsMissing(), {
  name:
    "capture: without --allow-ffi the proxy warns, HTTP is routed by Host, a TCP connection is closed saying why",
  async fn() {
    const log = await withProxy(6, [], "ALLOW_ANY", async (exec, proxy) => {
      assert.equal(await curl(exec, "http://10.221.6.11/y"), "web GET /y 200");
      const a = await roundTrip(exec, "10.221.6.10", 9000, 1000);
      assert.equal(a.got, 0);
      assert.equal((await proxy.stats()).echo, 0);
    });
    assert.match(log, /transparent capture off.*no FFI permission for \/lib\/.*libc\.so\.6/);
    assert.match(
      log,
      /original destination unknown \(no FFI permission.*\): a tcp connection cannot be routed/,
    );
  },
}));

Deno.test(requires(netnsMissing(), {
  name: "capture: an HTTP2 service by VIP goes to the HTTP/2 path (h2c), not the TCP relay",
  async fn() {
    await withProxy(24, [ALLOW_FFI_FLAG], "ALLOW_ANY", async (exec, proxy) => {
      const r = await new Deno.Command(exec[0], {
        args: [
          ...exec.slice(1),
          "curl",
          "-s",
          "--max-time",
          "5",
          "--http2-prior-knowledge",
          "-w",
          " %{http_version}",
          "http://10.221.24.14/x",
        ],
        stdout: "piped",
        stderr: "null",
      }).output();
      assert.equal(new TextDecoder().decode(r.stdout), "hello /x\n 2");
      const c = (await proxy.stats()).counters;
      assert.equal(c.downstream_cx_http2_total, 1, "served by the HTTP/2 path, not relayed as TCP");
      assert.equal(c.upstream_cx_http2_total, 1);
    });
  },
}));
