/**
 * Whether the mesh's proxy pair carries each protocol of the benchmark: undefined when one short
 * exchange through the captured service address works, else why not (the bench then prints
 * `{"unavailable": ...}` for that side instead of a figure).
 *
 * @module
 */
import { grpcBench, iperf3 } from "./loads.ts";

/** undefined when a 1 s iperf3 run to `host:port` works. */
export async function probeTcp(host: string, port: number): Promise<string | undefined> {
  try {
    await iperf3(host, port, 1);
    return undefined;
  } catch (e) {
    return `TCP through the pair: ${(e as Error).message.trim().split("\n")[0]}`;
  }
}

/** undefined when `curl --http2-prior-knowledge` to `url` (Host `authority`) gets 200 over HTTP/2. */
export async function probeH2(url: string, authority: string): Promise<string | undefined> {
  const r = await new Deno.Command("curl", {
    args: [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code} %{http_version}",
      "-m",
      "3",
      "--http2-prior-knowledge",
      "-H",
      `Host: ${authority}`,
      url,
    ],
    stdout: "piped",
    stderr: "null",
  }).output();
  const got = new TextDecoder().decode(r.stdout);
  return got === "200 2"
    ? undefined
    : `h2c through the pair: curl got "${got}" (exit ${r.code}), not "200 2"`;
}

/** undefined when one gRPC unary call to `target` (`host:port`) succeeds. */
export async function probeGrpc(target: string, authority: string): Promise<string | undefined> {
  const [cmd, args] = grpcBench(["load", target, authority, "10", "0.1", "10"]);
  const r = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (r.success) {
    const out = JSON.parse(new TextDecoder().decode(r.stdout));
    if (out.ok === out.sent) return undefined;
  }
  const err = new TextDecoder().decode(r.stderr).trim().split("\n").slice(-2).join(" ");
  return `a gRPC unary call through the pair failed: ${err || new TextDecoder().decode(r.stdout)}`;
}
