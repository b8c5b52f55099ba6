/**
 * Test support for the meshd failover tests (root): a small network per test file, in subnet 10.247
 * (10.247.0.0/24 is lab_jwt_authz_test's; the failover tests take 10.247.1 and 10.247.2), made of network
 * namespaces with the file's prefix: a hub with a bridge, and one namespace per host joined to it by a
 * veth pair (as deploy/lab does); and the programs run inside them as processes whose output is kept.
 *
 * @module
 */
import { mustRun, run } from "../../deploy/lab/host.ts";

/** A host of the failover network: its namespace and address. */
export interface Host {
  netns: string;
  address: string;
}

/** A failover network: the hosts by role, and how to make and remove it. */
export interface FailoverNetwork {
  hosts: { meshdA: Host; meshdB: Host; httpbin: Host; sleep: Host };
  /** This host's own address on it, with `create(true)`. */
  hostAddress: string;
  /**
   * Makes the hub and the hosts, after removing what a crashed earlier run left; with `withHost`, this
   * host joins too (for a server the test runs itself, as the Kubernetes API).
   */
  create(withHost?: boolean): Promise<void>;
  /** Deletes every namespace of the network (each one's processes die with their last reference). */
  remove(): Promise<void>;
}

/**
 * The network of one test file: namespaces `<prefix>-hub`, `<prefix>-meshd-a`, ... on 10.247.<octet>.0/24,
 * so that files run in parallel never meet.
 */
export function failoverNetwork(prefix: string, octet: number): FailoverNetwork {
  const host = (name: string, last: number): Host => ({
    netns: `${prefix}-${name}`,
    address: `10.247.${octet}.${last}`,
  });
  const hosts = {
    meshdA: host("meshd-a", 2),
    meshdB: host("meshd-b", 3),
    httpbin: host("httpbin", 10),
    sleep: host("sleep", 11),
  };
  const hub = `${prefix}-hub`;
  const hostAddress = `10.247.${octet}.1`;
  const remove = async () => {
    for (const h of [...Object.values(hosts).map((h) => h.netns), hub]) await run("ip", ["netns", "del", h]);
  };
  const create = async (withHost = false) => {
    await remove();
    await mustRun("ip", ["netns", "add", hub]);
    await mustRun("ip", ["-n", hub, "link", "add", "br0", "type", "bridge"]);
    await mustRun("ip", ["-n", hub, "link", "set", "br0", "up"]);
    let n = 0;
    for (const h of Object.values(hosts)) {
      const link = `v${n++}`;
      await mustRun("ip", ["netns", "add", h.netns]);
      await mustRun("ip", [
        "-n",
        hub,
        "link",
        "add",
        link,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        h.netns,
      ]);
      await mustRun("ip", ["-n", hub, "link", "set", link, "master", "br0", "up"]);
      await mustRun("ip", ["-n", h.netns, "addr", "add", `${h.address}/24`, "dev", "eth0"]);
      await mustRun("ip", ["-n", h.netns, "link", "set", "eth0", "up"]);
      await mustRun("ip", ["-n", h.netns, "link", "set", "lo", "up"]);
    }
    if (withHost) {
      // Its peer lives in the hub: deleting the hub removes both ends.
      const link = `${prefix}-host`;
      await mustRun("ip", ["link", "add", link, "type", "veth", "peer", "name", "vh", "netns", hub]);
      await mustRun("ip", ["-n", hub, "link", "set", "vh", "master", "br0", "up"]);
      await mustRun("ip", ["addr", "add", `${hostAddress}/24`, "dev", link]);
      await mustRun("ip", ["link", "set", link, "up"]);
    }
  };
  return { hosts, hostAddress, create, remove };
}

/** A program running in a namespace. */
export interface NetnsProcess {
  /** Its pid: that of the program itself, as `ip netns exec` execs it. */
  pid: number;
  /** Everything it wrote (stdout and stderr) so far. */
  output(): string;
  /** Whether it has exited. */
  exited(): boolean;
  /** SIGKILL unless it has exited; resolves when it has, with the rest of its output read. */
  kill(): Promise<void>;
}

/** Starts `argv` in `netns` with `env` added, keeping its output. */
export function spawnIn(netns: string, argv: string[], env: Record<string, string> = {}): NetnsProcess {
  const child = new Deno.Command("ip", {
    args: ["netns", "exec", netns, ...argv],
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const sink = () => new WritableStream<string>({ write: (chunk) => void (out += chunk) });
  const reading = Promise.all([
    child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(sink()).catch(() => {}),
    child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(sink()).catch(() => {}),
  ]);
  let exited = false;
  const status = child.status.then(() => void (exited = true));
  return {
    pid: child.pid,
    output: () => out,
    exited: () => exited,
    kill: async () => {
      if (!exited) child.kill("SIGKILL");
      await status;
      await reading;
    },
  };
}

/** Runs `argv` in `netns` to completion: exit code and stdout. */
export async function execIn(netns: string, argv: string[]): Promise<{ code: number; stdout: string }> {
  const r = await new Deno.Command("ip", { args: ["netns", "exec", netns, ...argv], stdin: "null" }).output();
  return { code: r.code, stdout: new TextDecoder().decode(r.stdout) };
}

/** GET `url` with curl from inside `netns`: the status code (0 when no answer) and the body. */
export async function curlIn(
  netns: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const h = Object.entries(headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]);
  const r = await execIn(netns, ["curl", "-s", "-m", "5", "-w", "\n%{http_code}", ...h, url]);
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)) || 0, body: r.stdout.slice(0, cut) };
}

/** What `hey` reported: responses per status, and errors. */
export interface HeyReport {
  statuses: Record<string, number>;
  errors: number;
  sent: number;
  /** Error lines as printed. */
  errorLines: string[];
}

/** Parses hey's summary ("Status code distribution", "Error distribution"). */
export function parseHey(text: string): HeyReport {
  const statuses: Record<string, number> = {};
  for (const m of text.matchAll(/^\s*\[(\d{3})\]\s+(\d+) responses$/gm)) statuses[m[1]] = Number(m[2]);
  const errorPart = text.split("Error distribution:")[1] ?? "";
  const errorLines = errorPart.split("\n").filter((l) => /^\s*\[\d+\]/.test(l));
  const errors = errorLines.reduce((n, l) => n + Number(/\[(\d+)\]/.exec(l)![1]), 0);
  const sent = Object.values(statuses).reduce((a, b) => a + b, 0) + errors;
  return { statuses, errors, sent, errorLines };
}
