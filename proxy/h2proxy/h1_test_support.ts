/**
 * curl with `--http2-prior-knowledge` for the tests of HTTP/2 streams sent to HTTP/1.1 applications
 * (./h1_upstream.ts): the response's HTTP version, status, header lines and body bytes, with the
 * request body from a file or from stdin (no length known: sent without content-length). Not used
 * by the proxy itself.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { processDeadline } from "../../shared/internal/testing/deadline.ts";

/** What curl received. */
export interface H2Response {
  /** curl's exit code (0: the exchange completed). */
  code: number;
  version: string;
  status: number;
  /** Response header lines of the final response (`name: value`, names as received: lower case in HTTP/2). */
  headers: string[];
  body: Uint8Array;
  stderr: string;
}

/** Options of {@link h2curl}. */
export interface H2CurlOptions {
  /** Extra curl arguments (method, headers, `--data-binary @file`). */
  args?: string[];
  /** A request body piped to curl and streamed (`-X POST -T -`: no content-length). */
  stdin?: Uint8Array;
}

/** Runs curl against `http://<address><path>` with `Host: <authority>` over h2c (prior knowledge). */
export async function h2curl(
  dir: string,
  address: string,
  authority: string,
  path: string,
  o: H2CurlOptions = {},
): Promise<H2Response> {
  const id = crypto.randomUUID();
  const bodyFile = join(dir, `${id}.body`), headerFile = join(dir, `${id}.head`);
  const deadline = processDeadline(30_000, `curl ${path}`);
  const child = new Deno.Command("curl", {
    args: [
      "-sS",
      "--max-time",
      "20",
      "--http2-prior-knowledge",
      "--path-as-is",
      "-o",
      bodyFile,
      "-D",
      headerFile,
      "-w",
      "%{http_version} %{http_code}",
      ...(o.stdin === undefined ? [] : ["-X", "POST", "-T", "-"]),
      ...(o.args ?? []),
      "-H",
      `Host: ${authority}`,
      `http://${address}${path}`,
    ],
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
    stdin: o.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: deadline.signal,
  }).spawn();
  if (o.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(o.stdin);
    await w.close();
  }
  const out = await child.output();
  deadline.end();
  const [version, status] = new TextDecoder().decode(out.stdout).split(" ");
  const read = async (f: string) => {
    try {
      return await Deno.readFile(f);
    } catch {
      return new Uint8Array(0);
    }
  };
  const head = new TextDecoder().decode(await read(headerFile));
  // The last head block: interim 1xx heads come before it.
  const blocks = head.split("\r\n\r\n").filter((b) => b.trim() !== "");
  const lines = (blocks.at(-1) ?? "").split("\r\n").slice(1);
  return {
    code: out.code,
    version,
    status: Number(status),
    headers: lines,
    body: await read(bodyFile),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** The value of a response header (by lower-case name), or undefined. */
export function headerOf(r: H2Response, name: string): string | undefined {
  const line = r.headers.find((l) => l.toLowerCase().startsWith(`${name}:`));
  return line?.slice(name.length + 1).trim();
}

/** Asserts curl completed with HTTP/2 and `status`. */
export function assertH2(r: H2Response, status: number): void {
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.version, "2");
  assert.equal(r.status, status, new TextDecoder().decode(r.body));
}
