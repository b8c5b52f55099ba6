/**
 * `POST /debug/bootstrapToken` on meshd's debug interface: mints a bootstrap token for
 * `meshctl x workload entry configure` running on the same host. See README.md in this folder for
 * why this endpoint is safe enough to exist, and what its limits are.
 *
 * The handler trusts nothing about how it is mounted and refuses, on its own:
 * - peers that are not loopback addresses (403): the authority is "can run a process on meshd's
 *   host", the same as `meshd token` reading ROOT_CA_DIR, only weaker, see README;
 * - a `Host` header that is not a loopback name or literal (403), which defeats DNS rebinding;
 * - requests with an `Origin` or `Sec-Fetch-Site: cross-site`/`same-site` header (403): browsers
 *   send those, command-line clients do not, so a web page cannot mint tokens through a victim's
 *   browser;
 * - any method but POST (405) and any body but `application/json` (415), which a browser cannot send
 *   cross-origin without a CORS preflight this endpoint never grants.
 *
 * Request body: `{"namespace": "foo", "serviceAccount": "sleep", "durationSeconds": 3600}`
 * (`durationSeconds` optional). Response: `{"token", "expiresAt", "namespace", "serviceAccount", "audience"}`.
 *
 * @module
 */
import type { BootstrapToken, BootstrapTokenRequest } from "../../shared/internal/ca/bootstrap_tokens.ts";

/** The path this handler answers. */
export const BOOTSTRAP_TOKEN_PATH = "/debug/bootstrapToken";

/** Largest request body read. */
const MAX_BODY_BYTES = 4096;

/** Whether `host` (an address or a `Host` header's name) is loopback. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function hostName(hostHeader: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(hostHeader);
  if (m) return m[1];
  return hostHeader.replace(/:\d+$/, "");
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body) + "\n", {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

/** Options of {@link bootstrapTokenHandler}. */
export interface BootstrapTokenEndpointOptions {
  /** Mints the token (the CA facade's issueBootstrapToken). */
  issue(req: BootstrapTokenRequest): Promise<BootstrapToken>;
  /** Called for every token minted, for the audit log. */
  onIssued?(token: BootstrapToken, peer: string): void;
}

/**
 * A fetch-style handler for {@link BOOTSTRAP_TOKEN_PATH}.
 *
 * @returns `(request, peerAddress) => Response`; `peerAddress` is the TCP peer's IP (for Deno.serve,
 *   `info.remoteAddr.hostname`)
 */
export function bootstrapTokenHandler(
  options: BootstrapTokenEndpointOptions,
): (request: Request, peerAddress: string) => Promise<Response> {
  return async (request, peerAddress) => {
    if (!isLoopback(peerAddress)) {
      return json(403, { error: "bootstrap tokens are issued to loopback clients only" });
    }
    const host = request.headers.get("host") ?? new URL(request.url).host;
    if (!isLoopback(hostName(host))) return json(403, { error: `Host ${host} is not a loopback name` });
    const site = request.headers.get("sec-fetch-site");
    if (request.headers.has("origin") || (site !== null && site !== "none")) {
      return json(403, { error: "browser requests are refused" });
    }
    if (request.method !== "POST") {
      return new Response(null, { status: 405, headers: { allow: "POST" } });
    }
    const type = request.headers.get("content-type") ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) return json(415, { error: "send application/json" });
    if (Number(request.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) {
      return json(413, { error: `body over ${MAX_BODY_BYTES} bytes` });
    }
    const text = await request.text();
    if (new TextEncoder().encode(text).byteLength > MAX_BODY_BYTES) {
      return json(413, { error: `body over ${MAX_BODY_BYTES} bytes` });
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text);
    } catch {
      return json(400, { error: "body is not JSON" });
    }
    const { namespace, serviceAccount, durationSeconds } = body ?? {};
    if (typeof namespace !== "string" || typeof serviceAccount !== "string") {
      return json(400, { error: "namespace and serviceAccount (strings) are required" });
    }
    if (durationSeconds !== undefined && typeof durationSeconds !== "number") {
      return json(400, { error: "durationSeconds must be a number" });
    }
    try {
      const token = await options.issue({ namespace, serviceAccount, durationSeconds });
      options.onIssued?.(token, peerAddress);
      return json(200, { ...token, expiresAt: token.expiresAt.toISOString() });
    } catch (e) {
      return json(400, { error: (e as Error).message });
    }
  };
}
