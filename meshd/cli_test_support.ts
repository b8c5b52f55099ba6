/**
 * Running the real meshd program in tests: `meshd` for a command that ends by itself, `discovery`
 * for a served `meshd discovery` on free loopback ports.
 *
 * @module
 */
import { processDeadline } from "../shared/internal/testing/deadline.ts";
export const MAIN = new URL("./main.ts", import.meta.url).pathname;
export const ROOT = new URL("../", import.meta.url).pathname;

export interface Run {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs the real meshd program with the permissions of `deno task meshd` (plus `extra`), in an
 * environment holding only `vars` and what Deno needs, so that the machine's variables do not leak in.
 */
export async function meshd(
  args: string[],
  options: { vars?: Record<string, string>; extra?: string[] } = {},
): Promise<Run> {
  const base: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["HOME", "PATH", "DENO_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  const deadline = processDeadline(60_000, `meshd ${args.join(" ")}`);
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", ...(options.extra ?? []), MAIN, ...args],
    cwd: ROOT,
    clearEnv: true,
    env: { ...base, ...options.vars },
    stdin: "null",
    signal: deadline.signal,
  }).output();
  deadline.end();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}

/** The environment of a test's meshd: no colour, the CA in `caDir`, and what Deno needs (nothing else leaks in). */
export function discoveryEnv(caDir: string): Record<string, string> {
  const base: Record<string, string> = { NO_COLOR: "1", ROOT_CA_DIR: caDir };
  for (const name of ["HOME", "PATH", "DENO_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  return base;
}

/** `deno run` and the permissions of `meshd discovery` (writing only the CA directory, when given). */
export function discoveryPermissions(caDir: string | undefined): string[] {
  return [
    "run",
    "--allow-read",
    "--allow-env",
    "--allow-net",
    "--allow-sys",
    `--allow-run=${Deno.execPath()}`,
    ...(caDir === undefined ? [] : [`--allow-write=${caDir}`]),
  ];
}

/**
 * Runs `meshd discovery` for real on free loopback ports with a temp config and CA directory, waits
 * until it logs "meshd ready" (or exits), then stops it with SIGTERM. `args` come after the defaults,
 * so they win.
 */
export async function discovery(
  args: string[],
  options: {
    vars?: Record<string, string>;
    extra?: string[];
    writable?: boolean;
    /** Runs while meshd serves, given its output so far. */
    whileReady?: (out: string) => Promise<void>;
  } = {},
): Promise<Run> {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/config`);
  const base = discoveryEnv(`${dir}/ca`);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      ...discoveryPermissions(options.writable === false ? undefined : `${dir}/ca`),
      ...(options.extra ?? []),
      MAIN,
      "discovery",
      ...["--configDir", `${dir}/config`, "--meshConfig", `${dir}/no-mesh-config`],
      ...["--grpcAddr", "127.0.0.1:0", "--secureGRPCAddr", "127.0.0.1:0", "--httpAddr", "127.0.0.1:0"],
      ...["--httpsAddr", "127.0.0.1:0"],
      ...["--monitoringAddr", "127.0.0.1:0", "--ctrlz_port", "0"],
      ...args,
    ],
    cwd: ROOT,
    clearEnv: true,
    env: { ...base, ...options.vars },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let err = "";
  const collect = async (stream: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) add(chunk);
  };
  const reading = Promise.all([
    collect(child.stdout, (t) => (out += t)),
    collect(child.stderr, (t) => (err += t)),
  ]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const deadline = Date.now() + 30_000;
  while (!exited && !/meshd ready/.test(out + err) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  let failure: unknown;
  if (!exited && options.whileReady) await options.whileReady(out + err).catch((e) => (failure = e));
  if (!exited) child.kill("SIGTERM");
  const { code } = await status;
  await reading;
  await Deno.remove(dir, { recursive: true });
  if (failure) throw failure;
  return { code, out, err };
}

/** Help text with line wrapping undone, so that phrases can be matched. */
export function flat(text: string): string {
  return text.replace(/\s+/g, " ");
}
