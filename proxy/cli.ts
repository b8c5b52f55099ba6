/**
 * The `proxy` program: pilot-agent and the data plane in one process. One command; its flags are in
 * ./options/flags.ts, validated all at once (each error names its flag; exit 1), then
 * {@link runProxy} runs until SIGINT, SIGTERM or POST /quitquitquit.
 *
 * The inbound data path (with RequestAuthentication and AuthorizationPolicy), the outbound listener
 * (proxy/outbound), the gateway mode (`--type router`; partial: HTTP and HTTPS SIMPLE/MUTUAL servers, uri matches),
 * workers and admin work.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { addProxyFlags, type ProxyOptions, readProxyFlags, validateProxyFlags } from "./options/flags.ts";
import { runProxy } from "./run.ts";
import { runProxyless } from "./proxyless/run.ts";

/** Where a run's output goes, and what it reads from the host. */
export interface ProxyIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  cores: number;
  hostname(): string;
}

/** The description `--help` shows. */
export const DESCRIPTION =
  "The mesh proxy (pilot-agent and the data plane in one process): gets the workload certificate " +
  "from meshd, keeps a Delta ADS stream, and serves the --inbound ports (mutual TLS per " +
  "PeerAuthentication, X-Forwarded-Client-Cert) from --concurrency workers, with an admin interface on " +
  "127.0.0.1:--proxy-admin-port; --outbound routes the application's HTTP/1.1 to services. Inbound " +
  "requests pass RequestAuthentication (JWT, 401) and AuthorizationPolicy (403). --type router runs an " +
  "ingress gateway from Gateways and VirtualServices, with TLS from Kubernetes Secrets (PARTIAL: HTTP " +
  "servers, and HTTPS servers with tls.mode SIMPLE or MUTUAL and credentialName; no PASSTHROUGH, " +
  "ISTIO_MUTUAL or AUTO_PASSTHROUGH; uri, port and gateways matches only; no redirect, rewrite or direct " +
  "responses). --proxyless <dir> runs only the agent for proxyless gRPC applications (bootstrap and " +
  "certificate files; see proxy/README.md)";

/**
 * Builds the command; `run` receives the validated options (the real program runs the proxy).
 */
export function buildProgram(
  io: ProxyIo,
  setExitCode: (code: number) => void,
  run: (options: ProxyOptions) => Promise<number> = (o) =>
    o.proxyless === undefined ? runProxy(o, io) : runProxyless(o, io),
): CommandUnknownOpts {
  const program: CommandUnknownOpts = new Command("proxy").description(DESCRIPTION).showHelpAfterError()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr }).exitOverride();
  addProxyFlags(program);
  program.action(async () => {
    const flags = validateProxyFlags(readProxyFlags(program), {
      env: io.env,
      cores: io.cores,
      hostname: io.hostname,
    });
    for (const w of flags.warnings) io.stderr(`warning: ${w}\n`);
    for (const e of flags.errors) io.stderr(`error: ${e}\n`);
    if (flags.errors.length > 0) return setExitCode(1);
    if (
      flags.options.proxyless !== undefined && (flags.options.inbound.length > 0 || flags.options.outbound)
    ) {
      io.stderr("warning: --inbound and --outbound have no effect with --proxyless (no data path)\n");
    }
    if (flags.options.proxyless !== undefined && flags.options.discoveryAddress.endsWith(":15012")) {
      io.stderr(
        "warning: --proxyless: gRPC reaches meshd in plain text; --discoveryAddress should be its --grpcAddr (15010)\n",
      );
    }
    if (flags.options.inbound.length === 0 && flags.options.proxyless === undefined) {
      io.stderr("warning: no --inbound ports: nothing to serve\n");
    }
    setExitCode(await run(flags.options));
  });
  return program;
}

/**
 * Runs the program with `args` (without the program name).
 *
 * @returns the exit code: 0 after a graceful stop or for --help, 1 on a bad value or a failed start,
 *   2 on bad usage (an unknown flag, a missing value)
 */
export async function runProxyCli(
  args: string[],
  io: ProxyIo,
  run?: (options: ProxyOptions) => Promise<number>,
): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => (code = c), run);
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    const err = e as { code?: string; exitCode?: number };
    if (!err.code?.startsWith("commander.")) throw e;
    if (err.exitCode === 0 || err.code === "commander.helpDisplayed" || err.code === "commander.help") {
      return 0;
    }
    return err.code === "commander.invalidArgument" ? 1 : 2;
  }
  return code;
}
