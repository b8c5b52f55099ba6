/**
 * originalDestination through a real REDIRECT (root): a probe program inside a namespace answers each
 * connection with what it read; IPv4 and IPv6, a direct connection, and a run without the FFI
 * permission.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { processDeadline, within } from "../../shared/internal/testing/deadline.ts";
import { captureNetns, mustRun, netnsMissing } from "./netns_test_support.ts";
import { ALLOW_FFI_FLAG, LIBC_PATH } from "./libc.ts";
import { originalDestination } from "./original_destination.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";

const PROBE = new URL("./probe_test_support.ts", import.meta.url).pathname;
const PORT = 15001;

/** Starts the probe in `netns` with `flags`, runs `connect` (bash /dev/tcp targets), returns the lines. */
async function probe(
  netns: string[],
  flags: string[],
  targets: string[],
  port = PORT,
  v6 = true,
): Promise<unknown[]> {
  const deadline = processDeadline(30_000, "capture probe");
  const child = new Deno.Command(netns[0], {
    args: [
      ...netns.slice(1),
      Deno.execPath(),
      "run",
      // A permission check that would prompt fails instead (a prompt would hang the probe unseen).
      "--no-prompt",
      "--allow-net",
      ...flags,
      PROBE,
      String(port),
      ...(v6 ? ["v6"] : []),
    ],
    stdout: "piped",
    stderr: "inherit",
    signal: deadline.signal,
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    assert.equal(first.value?.trim(), "ready");
    const script = targets.map((t) => `exec 3<>/dev/tcp/${t}; cat <&3; exec 3<&-`).join("\n");
    const out = await mustRun(netns[0], [...netns.slice(1), "timeout", "10", "bash", "-c", script]);
    reader.releaseLock();
    return out.trim().split("\n").map((l) => JSON.parse(l));
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel().catch(() => {});
    deadline.end();
  }
}

Deno.test(requires(netnsMissing(), {
  name: "originalDestination: REDIRECTed IPv4 and IPv6 give the address and port the client dialled",
  async fn() {
    const ns = await captureNetns(1, PORT);
    try {
      const got = await probe(ns.exec, [ALLOW_FFI_FLAG], [
        "10.221.1.7/8001",
        "10.221.1.200/5432",
        "fd00:221:1::7/8002",
        "127.0.0.1/15001",
        "::1/15001",
      ]);
      assert.deepEqual(got, [
        { kind: "redirected", destination: { address: "10.221.1.7", port: 8001, family: 4 } },
        { kind: "redirected", destination: { address: "10.221.1.200", port: 5432, family: 4 } },
        { kind: "redirected", destination: { address: "fd00:221:1::7", port: 8002, family: 6 } },
        // Dialled the listener itself: the conntrack entry names its own address (a forward-proxy client).
        { kind: "direct", destination: { address: "127.0.0.1", port: 15001, family: 4 } },
        { kind: "direct", destination: { address: "::1", port: 15001, family: 6 } },
      ]);
    } finally {
      await ns.remove();
    }
  },
}));

Deno.test(requires(netnsMissing(), {
  name: "originalDestination: without --allow-ffi the answer is unknown, naming the flag",
  async fn() {
    const ns = await captureNetns(2, PORT);
    try {
      const got = await probe(ns.exec, [], ["10.221.2.7/8001"]);
      assert.deepEqual(got, [{
        kind: "unknown",
        reason: `no FFI permission for ${LIBC_PATH} (run with ${ALLOW_FFI_FLAG})`,
      }]);
      // A permission for another file does not open it either.
      const other = await probe(ns.exec, ["--allow-ffi=/lib/other.so"], ["10.221.2.7/8001"]);
      assert.equal((other[0] as { kind: string }).kind, "unknown");
    } finally {
      await ns.remove();
    }
  },
}));

Deno.test("originalDestination: the duplicated descriptor is closed (1,000 lookups leave no descriptor open)", async () => {
  const open = () => [...Deno.readDirSync("/proc/self/fd")].length;
  const results = new Set<string>();
  let before = 0, after = 0;
  const server = net.createServer((s) => {
    before = open();
    for (let i = 0; i < 1000; i++) results.add(JSON.stringify(originalDestination(s)));
    after = open();
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const c = net.connect(port, "127.0.0.1");
  c.on("data", () => {});
  await within(new Promise((r) => c.on("close", r)), 10_000, "the server's close");
  await new Promise((r) => server.close(r));
  assert.equal(after, before);
  // Unredirected: its own address (conntrack on) or no entry; the same answer every time.
  assert.equal(results.size, 1);
  assert.match([...results][0], /"kind":"(direct|unknown)"/);
});

Deno.test("originalDestination: a connection conntrack does not know (ENOENT) is direct, with the FFI permission for libc only", async () => {
  // This process's own namespace: nothing is redirected here. errno is read without
  // Deno.UnsafePointerView, which would need --allow-ffi for every library (and prompt or throw).
  const port = freePort();
  const got = await probe(["env"], [ALLOW_FFI_FLAG], [`127.0.0.1/${port}`], port, false);
  assert.deepEqual(got, [{ kind: "direct", destination: { address: "127.0.0.1", port, family: 4 } }]);
});
