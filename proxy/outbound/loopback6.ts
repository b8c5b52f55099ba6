/**
 * The sidecar outbound listener's IPv6 twin: ip6tables REDIRECTs a captured IPv6 connection to
 * `[::1]:<port>` (the loopback's address, shared/internal/lab/redirect.ts `captureRuleSets`), never to
 * 127.0.0.1, so a sidecar listening on 127.0.0.1:15001 also listens on [::1]:15001, as Envoy's
 * virtualOutbound listener binds both families on a dual-stack pod (Istio's `additional_addresses`).
 *
 * @module
 */
import net from "node:net";
import { listen } from "../http/listen.ts";
import type { Log } from "../http/session_types.ts";

/** Errors that mean "this host has no IPv6 loopback": IPv6 capture is then impossible anyway. */
const NO_IPV6 = new Set(["EADDRNOTAVAIL", "EAFNOSUPPORT"]);

/**
 * Listens on `[::1]:port` with `onConnection` (the IPv4 listener's handler).
 *
 * @param port the IPv4 listener's bound port
 * @param asked what the IPv4 listener was asked for: with port 0 the kernel picked `port`, which may be
 *   taken on [::1] by someone else, so a bind error is then logged instead of thrown
 * @returns the server, or undefined when the host has no IPv6 loopback or a picked port failed (logged)
 * @throws the bind error otherwise (EADDRINUSE on a configured port, ...)
 */
export async function listenIpv6Loopback(
  port: number,
  asked: { port: number; reusePort?: boolean },
  onConnection: (raw: net.Socket) => void,
  log: Log,
): Promise<net.Server | undefined> {
  const { reusePort } = asked;
  const server = net.createServer({ allowHalfOpen: true }, onConnection);
  try {
    await listen(
      server,
      { address: "::1", port, reusePort },
      (err: Error) => log.error("outbound listener error", { address: "[::1]", error: err.message }),
    );
  } catch (e) {
    const code = (e as { code?: string }).code ?? "";
    if (!NO_IPV6.has(code) && asked.port !== 0) throw e;
    log.warn("outbound listener: not on [::1], IPv6 connections are not captured", { port, error: code });
    return undefined;
  }
  return server;
}
