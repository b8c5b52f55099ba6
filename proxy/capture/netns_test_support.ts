/**
 * Test and benchmark support (root): a throw-away network namespace with loopback, a veth pair
 * whose one end holds `10.221.<n>.1/24` and `fd00:221:<n>::1/64` (so that those ranges route), and
 * nat rules that REDIRECT TCP towards `10.221.<n>.0/24` and `fd00:221:<n>::/64` to a local port:
 * the lab's capture in miniature. Subnet 10.221 is the capture helper's (tests never meet).
 *
 * @module
 */
import { commandMissing, type Missing } from "../../shared/internal/testing/prerequisites.ts";

/** Undefined when this host can make the namespace (root, ip, iptables, ip6tables). */
export function netnsMissing(): Missing {
  if (Deno.uid() !== 0) return "needs root (network namespaces, iptables)";
  return commandMissing("ip") ?? commandMissing("iptables") ?? commandMissing("ip6tables");
}

/** Runs a command; throws with its stderr when it fails. */
export async function mustRun(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: exit ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

/** A namespace made by {@link captureNetns}. */
export interface CaptureNetns {
  name: string;
  /** The redirected ranges. */
  v4Range: string;
  v6Range: string;
  /** argv prefix that runs a command inside. */
  exec: string[];
  remove(): Promise<void>;
}

/**
 * Makes namespace `capture<pid>x<n>` whose TCP towards 10.221.`n`.0/24 and fd00:221:`n`::/64 is
 * REDIRECTed to `port` (nat OUTPUT), except for sockets of processes whose gid is `exceptGid` (the
 * proxy under test, started with `setpriv --regid`), as the lab's rules do.
 */
export async function captureNetns(n: number, port: number, exceptGid?: number): Promise<CaptureNetns> {
  const name = `capture${Deno.pid}x${n}`;
  const v4Range = `10.221.${n}.0/24`;
  const v6Range = `fd00:221:${n}::/64`;
  await mustRun("ip", ["netns", "add", name]);
  const ip = (...a: string[]) => mustRun("ip", ["-n", name, ...a]);
  const removeNs = () => mustRun("ip", ["netns", "del", name]).then(() => {});
  try {
    await ip("link", "set", "lo", "up");
    await ip("link", "add", "c0", "type", "veth", "peer", "name", "c1");
    await ip("addr", "add", `10.221.${n}.1/24`, "dev", "c0");
    await ip("-6", "addr", "add", `fd00:221:${n}::1/64`, "dev", "c0", "nodad");
    await ip("link", "set", "c0", "up");
    await ip("link", "set", "c1", "up");
    for (const [tool, range] of [["iptables", v4Range], ["ip6tables", v6Range]]) {
      const head = ["netns", "exec", name, tool, "-w", "-t", "nat", "-A", "OUTPUT", "-p", "tcp"];
      if (exceptGid !== undefined) {
        await mustRun("ip", [...head, "-m", "owner", "--gid-owner", String(exceptGid), "-j", "RETURN"]);
      }
      await mustRun("ip", [...head, "-d", range, "-j", "REDIRECT", "--to-ports", String(port)]);
    }
  } catch (e) {
    await removeNs();
    throw e;
  }
  return { name, v4Range, v6Range, exec: ["ip", "netns", "exec", name], remove: removeNs };
}

/**
 * A python3 client: connects, sends `size` random bytes while reading, half-closes (SHUT_WR) after
 * the last, reads until EOF; prints a {@link RoundTrip} as JSON (`got`: the bytes read, also when an
 * error came first).
 */
const ROUND_TRIP_PY = `
import hashlib, json, os, socket, sys, threading
host, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(size)
out = {"sent": size, "got": 0, "same": False, "error": None}
try:
    s = socket.create_connection((host, port), timeout=10)
    def send():
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            out["error"] = "send: " + e.__class__.__name__
    t = threading.Thread(target=send); t.start()
    h = hashlib.sha256()
    while True:
        b = s.recv(65536)
        if not b: break
        h.update(b); out["got"] += len(b)
    t.join()
    out["same"] = h.digest() == hashlib.sha256(data).digest()
except OSError as e:
    out["error"] = e.__class__.__name__
print(json.dumps(out))
`;

/** What {@link roundTrip} saw: bytes sent, bytes back, whether they were the same, an error's class. */
export interface RoundTrip {
  sent: number;
  got: number;
  same: boolean;
  error: string | null;
}

/**
 * Runs the round-trip client under `exec` (an argv prefix that enters a namespace, e.g. `ip netns exec
 * <ns>` or the lab's `execArgv`), against an echo at `host`:`port`, with a 20 s limit.
 */
export async function roundTrip(
  exec: string[],
  host: string,
  port: number,
  size: number,
): Promise<RoundTrip> {
  const args = [
    ...exec.slice(1),
    "timeout",
    "20",
    "/usr/bin/python3",
    "-c",
    ROUND_TRIP_PY,
    host,
    String(port),
  ];
  return JSON.parse(await mustRun(exec[0], [...args, String(size)])) as RoundTrip;
}
