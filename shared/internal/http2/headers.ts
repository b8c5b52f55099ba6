/**
 * Header lists of HTTP/2 messages and their validation as RFC 9113 sections 8.2 and 8.3 require and
 * as Envoy's codec (nghttp2) enforces: a message that fails is malformed, a stream error
 * PROTOCOL_ERROR (section 8.1.1).
 *
 * @module
 */

/** A header list: `[name, value]` pairs, names lowercase, pseudo-headers first, values latin1. */
export type HeaderList = [string, string][];

/** What a header block is: a request, a response (1xx or final) or trailers. */
export const KIND_REQUEST = 0;
/** A response head (`:status` only pseudo-header). */
export const KIND_RESPONSE = 1;
/** Trailers: no pseudo-headers. */
export const KIND_TRAILERS = 2;

/** RFC 9110 tchar, lowercase only (uppercase is malformed in HTTP/2, section 8.2.1). */
const NAME_CHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz") NAME_CHAR[c.charCodeAt(0)] = 1;

/** Connection-specific fields (section 8.2.2); `te` is allowed with the value "trailers" only. */
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

const REQUEST_PSEUDO = new Set([":method", ":scheme", ":authority", ":path"]);
/** A bit per known pseudo-header, to find repeats without allocating. */
const PSEUDO_BIT: Record<string, number> = {
  ":method": 1,
  ":scheme": 2,
  ":authority": 4,
  ":path": 8,
  ":status": 16,
};

/** The result of {@link validateHeaders}: `error` is null when the list is valid. */
export interface HeaderCheck {
  /** Why the list is malformed (for logs; the peer gets PROTOCOL_ERROR), or null. */
  error: string | null;
  /** Declared content-length, -1 when absent. */
  contentLength: number;
  /** Response: the `:status` code (0 otherwise). */
  status: number;
}

/**
 * Validates a received header list of the given kind (KIND_*). Checks: lowercase token names,
 * pseudo-headers known for the kind, before regular fields and not repeated; a request has `:method`,
 * and `:scheme` and a non-empty `:path` unless it is CONNECT (then `:authority` and neither of the
 * other two); a response has a 3-digit `:status` other than 101; no connection-specific field, `te`
 * only "trailers"; no NUL, CR or LF in a value; content-length digits and the same in every field.
 */
export function validateHeaders(headers: HeaderList, kind: number): HeaderCheck {
  const out: HeaderCheck = { error: null, contentLength: -1, status: 0 };
  let regular = false;
  let method = "";
  let scheme = false;
  let path = "";
  let authority = false;
  let seen = 0; // bit per pseudo-header (PSEUDO_BIT), no Set per message
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i];
    const bad = nameError(name) ?? valueError(value);
    if (bad) return fail(out, `${bad} in "${printable(name)}"`);
    if (name.charCodeAt(0) === 0x3a) {
      if (regular) return fail(out, `pseudo-header ${name} after a regular field`);
      if (kind === KIND_TRAILERS) return fail(out, `pseudo-header ${name} in trailers`);
      const bit = PSEUDO_BIT[name] ?? 0;
      if ((seen & bit) !== 0) return fail(out, `pseudo-header ${name} repeated`);
      seen |= bit;
      if (kind === KIND_REQUEST) {
        if (!REQUEST_PSEUDO.has(name)) return fail(out, `pseudo-header ${name} in a request`);
        if (name === ":method") method = value;
        else if (name === ":scheme") scheme = true;
        else if (name === ":path") path = value;
        else authority = true;
      } else {
        if (name !== ":status") return fail(out, `pseudo-header ${name} in a response`);
        if (!/^[1-9][0-9][0-9]$/.test(value) || value === "101") {
          return fail(out, `:status "${printable(value)}"`);
        }
        out.status = Number(value);
      }
      continue;
    }
    regular = true;
    if (CONNECTION_SPECIFIC.has(name)) return fail(out, `connection-specific field ${name}`);
    if (name === "te" && value !== "trailers") return fail(out, `te "${printable(value)}"`);
    if (name === "content-length") {
      if (!/^[0-9]{1,15}$/.test(value)) return fail(out, `content-length "${printable(value)}"`);
      const n = Number(value);
      if (out.contentLength >= 0 && out.contentLength !== n) return fail(out, "content-length values differ");
      out.contentLength = n;
    }
  }
  if (kind === KIND_REQUEST) {
    if (method === "") return fail(out, "no :method");
    if (method === "CONNECT") {
      if (scheme || path !== "" || !authority) return fail(out, "CONNECT needs :authority only");
    } else if (!scheme || path === "") return fail(out, "no :scheme or :path");
  } else if (kind === KIND_RESPONSE && out.status === 0) return fail(out, "no :status");
  return out;
}

function fail(out: HeaderCheck, error: string): HeaderCheck {
  out.error = error;
  return out;
}

function nameError(name: string): string | null {
  if (name.length === 0) return "empty name";
  const start = name.charCodeAt(0) === 0x3a ? 1 : 0;
  if (start === name.length) return "empty name";
  for (let i = start; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 128 || NAME_CHAR[c] === 0) {
      return c >= 0x41 && c <= 0x5a ? "uppercase name" : "bad name character";
    }
  }
  return null;
}

function valueError(value: string): string | null {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0 || c === 0x0a || c === 0x0d) return "NUL, CR or LF in the value";
  }
  return null;
}

/** A string safe to log (control characters escaped, at most 64 characters). */
function printable(s: string): string {
  return JSON.stringify(s.slice(0, 64)).slice(1, -1);
}

/** The first value of `name` (lowercase), or undefined. */
export function headerValue(headers: HeaderList, name: string): string | undefined {
  for (let i = 0; i < headers.length; i++) if (headers[i][0] === name) return headers[i][1];
  return undefined;
}
