/**
 * The request target as the outbound listener and the gateway route it: normalized once with the
 * mesh's `pathNormalization` (shared's normalizePath), its authority (an absolute-form target's,
 * which replaces Host as RFC 9112 section 3.2.2 says, else the Host header), and, when either
 * changes the request, the head rewritten in origin form with that path and Host. The session parses
 * the rewritten head, so the gateway's policies, its route and the application see one path.
 *
 * @module
 */
import type { PathNormalization } from "../../shared/mod.ts";
// The file, not the shared/mod.ts barrel (see ../filters/inbound_filter.ts).
import { normalizePath, PathError } from "../../shared/policy/authorization/path.ts";
import { ascii } from "../http/chars.ts";
import { H_HOST, type HttpHead } from "../http/http_head.ts";

/** A target the router can use, or why it is refused (400). */
export type RoutedTarget =
  | {
    ok: true;
    /** The lower-case scheme of an absolute-form target, else empty. */
    scheme: string;
    /** The absolute-form authority, else the Host header; null when there is neither. */
    authority: string | null;
    /** The normalized path (what routes match). */
    path: string;
    /** The query with its `?`, or empty. */
    query: string;
    /** The head to forward instead of the received one, or null when it is unchanged. */
    head: Uint8Array | null;
  }
  | { ok: false; reason: string };

/**
 * Reads, normalizes and, when needed, rewrites the target of a parsed request head.
 *
 * @param h the head as received
 * @param option the mesh's path normalization
 */
export function routedTarget(h: HttpHead, option: PathNormalization): RoutedTarget {
  let n;
  try {
    n = normalizePath(h.targetText(), option);
  } catch (e) {
    if (!(e instanceof PathError)) throw e;
    return { ok: false, reason: e.message };
  }
  const authority = n.authority ?? hostOf(h);
  const rewrite = n.changed || n.authority !== undefined;
  return {
    ok: true,
    scheme: n.scheme,
    authority,
    path: n.path,
    query: n.query,
    head: rewrite ? rewrittenHead(h, n.path + n.query, n.authority ?? null) : null,
  };
}

function hostOf(h: HttpHead): string | null {
  if (h.hostCount === 0) return null;
  for (let i = 0; i < h.count; i++) {
    if (h.kinds[i] === H_HOST) return h.value(i);
  }
  return null;
}

/** The head with another target, and with `host` instead of the received Host fields when given. */
export function rewrittenHead(h: HttpHead, target: string, host: string | null): Uint8Array {
  let text = `${h.methodText()} ${target} HTTP/1.${h.minor}\r\n`;
  if (host !== null) text += `host: ${host}\r\n`;
  for (let i = 0; i < h.count; i++) {
    if (host !== null && h.kinds[i] === H_HOST) continue;
    text += `${h.name(i)}: ${h.value(i)}\r\n`;
  }
  return ascii(text + "\r\n");
}
