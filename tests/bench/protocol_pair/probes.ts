/**
 * Whether the mesh's proxy pair carries each protocol of the benchmark today: undefined when it does,
 * else why not (the bench then prints `{"unavailable": ...}` for that side instead of a figure).
 *
 * @module
 */
import { grpcBench } from "./loads.ts";

/** A mesh pair on loopback cannot carry TCP to a service port: the client proxy cannot learn the destination. */
export function meshTcpUnavailable(): string | undefined {
  return "the client proxy routes by HTTP Host only; TCP to a service needs transparent capture " +
    "(issue 16 item 2), which this loopback pair does not have yet";
}

/** undefined when `curl --http2-prior-knowledge` through the outbound listener gets 200 over HTTP/2. */
export async function probeH2(outboundPort: number, authority: string): Promise<string | undefined> {
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
      `http://127.0.0.1:${outboundPort}/index.html`,
    ],
    stdout: "piped",
    stderr: "null",
  }).output();
  const got = new TextDecoder().decode(r.stdout);
  return got === "200 2"
    ? undefined
    : `h2c through the client proxy: curl got "${got}" (exit ${r.code}), not "200 2"`;
}

/** undefined when one gRPC unary call through the outbound listener succeeds. */
export async function probeGrpc(outboundPort: number, authority: string): Promise<string | undefined> {
  const [cmd, args] = grpcBench(["load", `127.0.0.1:${outboundPort}`, authority, "10", "0.1", "10"]);
  const r = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (r.success) {
    const out = JSON.parse(new TextDecoder().decode(r.stdout));
    if (out.ok === out.sent) return undefined;
  }
  const err = new TextDecoder().decode(r.stderr).trim().split("\n").slice(-2).join(" ");
  return `a gRPC unary call through the client proxy failed: ${err || new TextDecoder().decode(r.stdout)}`;
}
