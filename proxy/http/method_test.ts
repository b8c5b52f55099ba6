import assert from "node:assert/strict";
import { ascii } from "./chars.ts";
import { HeadParser } from "./head.ts";
import { HttpError, REQUEST } from "./http_head.ts";
import { KNOWN_METHODS, wrongCaseMethod } from "./method.ts";

function parse(text: string): HeadParser {
  const p = new HeadParser(REQUEST);
  assert.equal(p.feed(ascii(text)), text.length);
  return p;
}

function refused(text: string): HttpError {
  const p = new HeadParser(REQUEST);
  try {
    p.feed(ascii(text));
  } catch (e) {
    if (e instanceof HttpError) return e;
    throw e;
  }
  assert.fail(`accepted: ${JSON.stringify(text)}`);
}

// Envoy's codec answers these 400: the standard method in another case is not the method a
// `methods` rule names, yet gunicorn runs `delete` as DELETE.
for (
  const method of [
    "delete",
    "Delete",
    "DELETe",
    "get",
    "Get",
    "post",
    "pUT",
    "propfind",
    "m-search",
    "connect",
  ]
) {
  Deno.test(`a known method in the wrong case is 400: ${method}`, () => {
    const e = refused(`${method} /anything HTTP/1.1\r\nHost: x\r\n\r\n`);
    assert.equal(e.status, 400);
    assert.match(e.message, new RegExp(`^method ${method} is ${method.toUpperCase()} in the wrong case$`));
  });
}

// RFC 9110: methods are case-sensitive tokens; extension methods pass, as they were received.
for (const method of ["GET", "DELETE", "M-SEARCH", "QUERY", "foo", "Frobnicate", "BREW", "x-get"]) {
  Deno.test(`a method token that is no known method in another case is accepted: ${method}`, () => {
    assert.equal(parse(`${method} /anything HTTP/1.1\r\nHost: x\r\n\r\n`).head.methodText(), method);
  });
}

Deno.test("wrongCaseMethod on a slice of a buffer", () => {
  const b = ascii("xxgetyy");
  assert.equal(wrongCaseMethod(b, 2, 5), "method get is GET in the wrong case");
  assert.equal(wrongCaseMethod(b, 0, 7), null);
  assert.equal(wrongCaseMethod(ascii("GET"), 0, 3), null);
  for (const m of KNOWN_METHODS) assert.equal(m, m.toUpperCase());
});

// CVE-2021-32779: a fragment is never part of a request target; Envoy answers 400
// (http_reject_path_with_fragment), so `/headers#x` cannot reach /headers past a DENY on /headers.
for (
  const target of ["/headers#x", "/headers#", "/#/headers", "/headers?a=1#b", "http://h/headers#x", "#"]
) {
  Deno.test(`a # in the request target is 400: ${target}`, () => {
    const e = refused(`GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assert.equal(e.status, 400);
    assert.equal(e.message, "request target with a fragment (#)");
  });
}

Deno.test("an encoded # (%23) is part of the path and accepted", () => {
  assert.equal(parse("GET /a%23b HTTP/1.1\r\nHost: x\r\n\r\n").head.targetText(), "/a%23b");
});
