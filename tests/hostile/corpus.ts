/**
 * The shape of the hostile-input corpus (README.md): a case is raw request bytes built for one
 * entry (listener) of the lab, what Envoy does with them, and what would count as a bypass.
 *
 * @module
 */

/** What a case's bytes may depend on: the entry they go through. */
export interface CaseContext {
  /** The Host the entry routes by (`httpbin.foo:8000` for sidecars, `httpbin.example.com` for the gateway). */
  host: string;
  /**
   * A path, unique to this case and entry, that a policy at the entry's first proxy denies and that
   * the app logs if it ever receives it (the smuggled request's target).
   */
  mark: string;
  /**
   * A path unique to this case and entry that no policy denies, for bytes that must never become a
   * request at all (a denied request's body): the app must never log it either.
   */
  free: string;
  /** Signed tokens for the token cases (token_cases.ts). */
  tokens: Record<string, string>;
}

/** The groups of the corpus, in the order of the report. */
export type Group = "control" | "smuggling" | "path" | "method" | "token" | "oversized";

/** One hostile input. */
export interface HostileCase {
  /** Unique slug (used in the marker path). */
  id: string;
  group: Group;
  /** What the bytes try, for the report. */
  what: string;
  /** What Envoy does with it (its HTTP/1 codec and Istio's defaults), for the report. */
  envoy: string;
  /** The raw bytes (a string is taken byte for byte, latin1). */
  bytes: (c: CaseContext) => string | Uint8Array;
  /**
   * A response that must never come back (the protected resource's body); default: none besides
   * the app-log check of the marker.
   */
  never?: RegExp;
  /** Statuses a control case must get (a control shows the suite can fail). */
  want?: number[];
  /**
   * The protected answer is a refusal by our proxy itself (as Envoy's codec refuses): the first
   * answer must be a 4xx/5xx local reply, not the app's (a malformed request must never be forwarded).
   */
  refuse?: boolean;
  /** A control whose request of the undenied marker must show in the app's access log (the log oracle works). */
  logged?: boolean;
}

/** The listeners the corpus goes through. */
export type EntryName = "inbound" | "outbound" | "gateway";

/** httpbin's /headers body: `{"headers": {...}}` (its /anything puts "args" first). */
export const HEADERS_BODY = /\{\s*"headers"\s*:\s*\{/;
/** httpbin's /anything body of a request that reached the app as DELETE. */
export const DELETE_REACHED = /"method"\s*:\s*"DELETE"/;

/** `bytes` from a string whose every char is one byte (latin1). */
export function latin1(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

/** The bytes of a case for an entry. */
export function caseBytes(c: HostileCase, ctx: CaseContext): Uint8Array {
  const b = c.bytes(ctx);
  return typeof b === "string" ? latin1(b) : b;
}

/** The smuggled request: a GET of the marker path, complete, so that an app that sees it logs it. */
export function inner(c: CaseContext): string {
  return `GET ${c.mark} HTTP/1.1\r\nHost: ${c.host}\r\n\r\n`;
}

/** A complete GET of the case's undenied marker (see {@link CaseContext.free}). */
export function innerFree(c: CaseContext): string {
  return `GET ${c.free} HTTP/1.1\r\nHost: ${c.host}\r\n\r\n`;
}

/** Statuses a proxy refuses a request with. */
export const REFUSALS = [400, 404, 405, 413, 414, 431, 501, 502, 505];

/** Whether the first response in `text` is the app's (gunicorn), not a proxy's local reply. */
export function fromApp(text: string): boolean {
  const next = text.indexOf("HTTP/1.", 1);
  const first = next < 0 ? text : text.slice(0, next);
  return /^Server: gunicorn\r$/mi.test(first) || /^Content-Type: text\/html/mi.test(first);
}

/** Whether an Envoy outcome is a refusal by the codec (a 4xx/5xx local reply). */
export function envoyRefuses(envoy: string): boolean {
  return /^(400|413|414|431|501|502|505)\b/.test(envoy);
}

/** The statuses of every response head in `text` (pipelined answers give several). */
export function statuses(text: string): number[] {
  return [...text.matchAll(/(?:^|\n)HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}
