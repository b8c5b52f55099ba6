import assert from "node:assert/strict";
import {
  HASH_START,
  hashKey,
  hashPrincipal,
  hashRange,
  hashStep,
  hashText,
  hashTextBackwards,
  hashTextFolded,
} from "./key_hash.ts";

Deno.test("hashText is FNV-1a of the code units, kept to 30 bits", () => {
  // FNV-1a 32 of "a" is 0xe40c292c.
  assert.equal(hashText("a"), 0xe40c292c & 0x3fffffff);
  assert.equal(hashText(""), 0x811c9dc5 & 0x3fffffff);
  assert.notEqual(hashText("/a"), hashText("/b"));
});

Deno.test("a running hash equals the hash of the prefix read so far", () => {
  const path = "/api/v1/items";
  let h = HASH_START;
  for (let i = 0; i < path.length; i++) {
    h = hashStep(h, path.charCodeAt(i));
    assert.equal(hashKey(h), hashText(path.slice(0, i + 1)));
    assert.equal(hashKey(hashRange(path, 0, i + 1)), hashText(path.slice(0, i + 1)));
  }
});

Deno.test("hashTextBackwards reads the string from its end", () => {
  assert.equal(hashTextBackwards(".js"), hashText("sj."));
});

Deno.test("hashTextFolded is the hash of the lower-cased text", () => {
  for (const host of ["HttpBin.Foo:8000", "httpbin.foo", "ÉCOLE.example", "\u212a.example"]) {
    assert.equal(hashTextFolded(host), hashText(host.toLowerCase()), host);
  }
});

Deno.test("hashPrincipal keys the subject and the issuer's length", () => {
  assert.equal(hashPrincipal("https://a", "s"), hashPrincipal("https://b", "s"));
  assert.notEqual(hashPrincipal("https://a", "s"), hashPrincipal("https://ab", "s"));
  assert.notEqual(hashPrincipal("https://a", "s"), hashPrincipal("https://a", "t"));
});
