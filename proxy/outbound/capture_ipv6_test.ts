/**
 * IPv6 transparent capture end to end (root): a network namespace whose rules are the sidecar's own
 * (shared/internal/lab/redirect.ts `captureRuleSets`, iptables and ip6tables, as `lab up` and the
 * injected init container install them), the outbound listener in sidecar mode on 127.0.0.1:15001
 * and its [::1] twin (./capture_test_support.ts with IPv6 addresses, run with gid 1337), and real
 * clients (python3 sockets, curl) dialling IPv6 service and pod addresses and a destination outside
 * the mesh. Lab subnet: fd00:213:<n>::/64 (and 10.213.<n>.0/24 for the IPv4 side), namespace
 * `cap6<pid>x<n>`.
 */
import assert from "node:assert/strict";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { mustRun, netnsMissing, roundTrip } from "../capture/netns_test_support.ts";
import { ALLOW_FFI_FLAG } from "../capture/libc.ts";
import { curl, withCaptureProxy } from "./capture_proxy_test_support.ts";
import { captureRuleSets, PROXY_GID, PROXY_UID } from "../../shared/internal/lab/redirect.ts";

const MiB = 1 << 20;

/** A python3 echo (ends its side after the client's FIN) on [::]:9001 and [::]:7000; prints `ready`. */
const PEER_ECHO_PY = `
import socket, threading
def serve(conn):
    while True:
        b = conn.recv(65536)
        if not b:
            conn.shutdown(socket.SHUT_WR); conn.close(); return
        conn.sendall(b)
def listen(port):
    s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port)); s.listen(16)
    threading.Thread(target=lambda: [threading.Thread(target=serve, args=(s.accept()[0],)).start() for _ in iter(int, 1)], daemon=True).start()
for p in (9001, 7000): listen(p)
print("ready", flush=True)
import sys; sys.stdin.read()
`;

/**
 * The sidecar's namespace `cap6<pid>x<n>` (fd00:213:<n>::1, 10.213.<n>.1) with the capture rules of
 * both families, joined by a veth pair to a peer namespace `cap6<pid>p<n>` (fd00:213:<n>::2) that
 * runs {@link PEER_ECHO_PY}: a destination that is not one of the sidecar's own addresses (those go
 * out through `lo` and are not captured, as in Istio).
 */
async function sidecarNetns(n: number): Promise<{ exec: string[]; remove(): Promise<void> }> {
  const name = `cap6${Deno.pid}x${n}`;
  const peer = `cap6${Deno.pid}p${n}`;
  await mustRun("ip", ["netns", "add", name]);
  await mustRun("ip", ["netns", "add", peer]);
  let echo: Deno.ChildProcess | undefined;
  const remove = async () => {
    // Its end of stdin ends the echo.
    await echo?.stdin.close().catch(() => {});
    await echo?.status;
    await mustRun("ip", ["netns", "del", name]);
    await mustRun("ip", ["netns", "del", peer]);
  };
  try {
    const ip = (...a: string[]) => mustRun("ip", ["-n", name, ...a]);
    await ip("link", "set", "lo", "up");
    await ip("link", "add", "c0", "type", "veth", "peer", "name", "c1", "netns", peer);
    await ip("addr", "add", `10.213.${n}.1/24`, "dev", "c0");
    await ip("-6", "addr", "add", `fd00:213:${n}::1/64`, "dev", "c0", "nodad");
    await ip("link", "set", "c0", "up");
    await mustRun("ip", ["-n", peer, "-6", "addr", "add", `fd00:213:${n}::2/64`, "dev", "c1", "nodad"]);
    await mustRun("ip", ["-n", peer, "link", "set", "c1", "up"]);
    await mustRun("ip", ["-n", peer, "link", "set", "lo", "up"]);
    const sets = captureRuleSets({
      port: 15001,
      proxyUid: PROXY_UID,
      proxyGid: PROXY_GID,
      includeIPRanges: [],
      excludeIPRanges: [],
      excludePorts: [],
    });
    for (const set of sets) {
      for (const rule of set.rules) await mustRun("ip", ["netns", "exec", name, set.tool, ...rule]);
    }
    echo = new Deno.Command("ip", {
      args: ["netns", "exec", peer, "/usr/bin/python3", "-c", PEER_ECHO_PY],
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const ready = echo.stdout.pipeThrough(new TextDecoderStream()).getReader();
    assert.equal((await ready.read()).value?.trim(), "ready");
    await ready.cancel();
  } catch (e) {
    await remove();
    throw e;
  }
  return { exec: ["ip", "netns", "exec", name], remove };
}

Deno.test(requires(netnsMissing(), {
  name:
    "capture (IPv6): a service VIP, a pod address and mutual TLS by ip6tables REDIRECT to [::1]:15001; passthrough outside the mesh",
  async fn() {
    const n = 1;
    const args = [String(n), "ALLOW_ANY", "6"];
    const log = await withCaptureProxy(await sidecarNetns(n), [ALLOW_FFI_FLAG], args, async (exec, proxy) => {
      // A TCP service by its IPv6 VIP, byte for byte with half-close.
      assert.deepEqual(await roundTrip(exec, "fd00:213:1::a", 9000, 2 * MiB), {
        sent: 2 * MiB,
        got: 2 * MiB,
        same: true,
        error: null,
      });
      // A pod address (not the sidecar's own) and its target port: that endpoint.
      assert.deepEqual(await roundTrip(exec, "fd00:213:1::2", 9001, 1000), {
        sent: 1000,
        got: 1000,
        same: true,
        error: null,
      });
      // A proxied endpoint behind an IPv6 VIP: mutual TLS with secure naming.
      assert.deepEqual(await roundTrip(exec, "fd00:213:1::c", 9000, MiB), {
        sent: MiB,
        got: MiB,
        same: true,
        error: null,
      });
      // An IPv6 destination in no service: passed through to it in plain text.
      assert.deepEqual(await roundTrip(exec, "fd00:213:1::2", 7000, 1000), {
        sent: 1000,
        got: 1000,
        same: true,
        error: null,
      });
      // HTTP to an IPv6 VIP, routed by Host (curl sends Host: [fd00:213:1::b]: the VIP names it).
      assert.equal(await curl(exec, "http://[fd00:213:1::b]/x"), "web GET /x 200");
      const s = await proxy.stats();
      const c = s.counters;
      assert.equal(c["tcp.outbound|9000||echo.a.svc.cluster.local.downstream_cx_rx_bytes_total"], 2 * MiB);
      assert.equal(c["tcp.outbound|9000||remote.a.svc.cluster.local.downstream_cx_total"], 1);
      assert.equal(c["tcp.outbound|9000||secure.a.svc.cluster.local.downstream_cx_rx_bytes_total"], MiB);
      assert.equal(c["tcp.PassthroughCluster.downstream_cx_total"], 1);
      assert.equal(c.upstream_cx_mtls_total, 1);
      assert.equal(s.echo, 1);
      assert.deepEqual(s.peers.map((p) => p.includes("URI:spiffe://cluster.local/ns/a/sa/client")), [true]);
    });
    assert.doesNotMatch(log, /original destination unknown/);
  },
}));
