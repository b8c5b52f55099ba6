/**
 * Method tokens in the wrong case. RFC 9110 section 9.1 makes the method case-sensitive, so `delete`
 * is not DELETE, yet many servers (gunicorn among them) upper-case it and run DELETE, while an
 * AuthorizationPolicy `methods: ["DELETE"]` does not match it. Envoy's HTTP/1 codec knows only the
 * registered methods, in upper case, and answers anything else 400; this proxy keeps extension
 * methods (RFC 9110 allows them, matched case-sensitively) and refuses only a token that is a known
 * method in another case (`delete`, `Get`, `PropFind`).
 *
 * Source: the method list of Envoy's HTTP/1 parsers (http-parser/llhttp, Balsa's isMethodValid).
 *
 * @module
 */
/** The methods Envoy's HTTP/1 codec accepts (http-parser's and llhttp's list), upper case. */
export const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "ACL",
  "BIND",
  "CHECKOUT",
  "CONNECT",
  "COPY",
  "DELETE",
  "GET",
  "HEAD",
  "LINK",
  "LOCK",
  "M-SEARCH",
  "MERGE",
  "MKACTIVITY",
  "MKCALENDAR",
  "MKCOL",
  "MOVE",
  "NOTIFY",
  "OPTIONS",
  "PATCH",
  "POST",
  "PROPFIND",
  "PROPPATCH",
  "PURGE",
  "PUT",
  "QUERY",
  "REBIND",
  "REPORT",
  "SEARCH",
  "SOURCE",
  "SUBSCRIBE",
  "TRACE",
  "UNBIND",
  "UNLINK",
  "UNLOCK",
  "UNSUBSCRIBE",
]);

/**
 * Whether the method token `b[s, e)` is a known method in another case (the parser answers 400). A
 * token without a lower-case letter (every well-formed request) costs one scan and no allocation.
 *
 * @returns why the token is refused (`method delete is DELETE in the wrong case`), or null
 */
export function wrongCaseMethod(b: Uint8Array, s: number, e: number): string | null {
  let lower = false;
  for (let i = s; i < e; i++) {
    if (b[i] >= 0x61 && b[i] <= 0x7a) {
      lower = true;
      break;
    }
  }
  if (!lower) return null;
  let token = "";
  for (let i = s; i < e; i++) token += String.fromCharCode(b[i]);
  const upper = token.toUpperCase();
  return KNOWN_METHODS.has(upper) ? `method ${token} is ${upper} in the wrong case` : null;
}
