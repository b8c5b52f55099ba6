/**
 * Hostile HTTP/2 peers (python3-h2's hpack, raw frames: `hostile_peer.py`) against the codec's server
 * role (the echo server, in this process). Each case asserts the exact RST_STREAM or GOAWAY the codec
 * sends, and that the server then still answers a plain request on a new connection; each limit-based
 * defence also runs with its limit lifted, which must change the outcome.
 */
import assert from "node:assert/strict";
import { processDeadline } from "../testing/deadline.ts";
import { pythonModulesMissing, requires } from "../testing/prerequisites.ts";
import { startEchoServer } from "./echo_test_support.ts";
import { errorName } from "./frame.ts";
import { type Expect, HOSTILE_CASES } from "./hostile_cases.ts";
import type { Http2Limits } from "./limits.ts";

const PEER = new URL("./hostile_peer.py", import.meta.url).pathname;

/** What hostile_peer.py prints. */
interface PeerResult {
  goaway: [number, number, string][];
  rst: [number, number][];
  status: Record<string, number>;
  acks: number;
  closed: boolean;
  alive: boolean;
}

async function attack(name: string, limits?: Partial<Http2Limits>): Promise<PeerResult> {
  const server = await startEchoServer(0, false, limits);
  try {
    const deadline = processDeadline(60_000, `hostile_peer.py ${name}`);
    const out = await new Deno.Command("/usr/bin/python3", {
      args: [PEER, String(server.port), name],
      stdout: "piped",
      stderr: "piped",
      signal: deadline.signal,
    }).output();
    deadline.end();
    const text = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, `${name}: ${new TextDecoder().decode(out.stderr)}`);
    return JSON.parse(text) as PeerResult;
  } finally {
    await server.close();
  }
}

/** The differences between `r` and `e`, as lines (empty: all met). */
function unmet(r: PeerResult, e: Expect): string[] {
  const out: string[] = [];
  const codes = r.goaway.map((g) => g[1]);
  if (e.goaway === "none" && codes.length > 0) out.push(`GOAWAY ${codes.map(errorName)} sent`);
  if (typeof e.goaway === "number" && codes[0] !== e.goaway) {
    out.push(`GOAWAY ${errorName(e.goaway)} expected, got ${codes.map(errorName).join(",") || "none"}`);
  }
  if (e.rst && !r.rst.some(([s, c]) => s === e.rst![0] && c === e.rst![1])) {
    out.push(`RST_STREAM ${e.rst[0]} ${errorName(e.rst[1])} expected, got ${JSON.stringify(r.rst)}`);
  }
  if (e.status && r.status[String(e.status[0])] !== e.status[1]) {
    out.push(`stream ${e.status[0]} status ${e.status[1]} expected, got ${r.status[String(e.status[0])]}`);
  }
  if (e.closed !== undefined && r.closed !== e.closed) out.push(`closed ${e.closed} expected`);
  return out;
}

const missing = pythonModulesMissing(["hpack"], "python3-h2");

for (const c of HOSTILE_CASES) {
  Deno.test(requires(missing, {
    name: `hostile: ${c.name}: ${c.defence}`,
    async fn() {
      const r = await attack(c.name);
      assert.deepEqual(unmet(r, c.expect), [], JSON.stringify(r).slice(0, 600));
      assert.ok(r.alive, "the server answers a plain GET afterwards");
      if (!c.control) return;
      const off = await attack(c.name, c.control);
      assert.notDeepEqual(
        unmet(off, c.expect),
        [],
        `with ${JSON.stringify(c.control)} the attack must get through`,
      );
    },
  }));
}
