import assert from "node:assert/strict";
import { hex, toHex } from "./hex_test_support.ts";
import { huffmanDecode, huffmanEncode, huffmanLength } from "./huffman.ts";

/** The Huffman-coded strings of RFC 7541 Appendix C.4 and C.6. */
const APPENDIX_C: [string, string][] = [
  ["www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"],
  ["no-cache", "a8eb 1064 9cbf"],
  ["custom-key", "25a8 49e9 5ba9 7d7f"],
  ["custom-value", "25a8 49e9 5bb8 e8b4 bf"],
  ["302", "6402"],
  ["307", "640e ff"],
  ["private", "aec3 771a 4b"],
  ["Mon, 21 Oct 2013 20:13:21 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"],
  ["https://www.example.com", "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3"],
  ["gzip", "9bd9 ab"],
  [
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
  ],
];

for (const [text, code] of APPENDIX_C) {
  Deno.test(`huffman: RFC 7541 Appendix C "${text.slice(0, 20)}"`, () => {
    const want = hex(code);
    assert.deepEqual(huffmanLength(text), want.length);
    const out = new Uint8Array(want.length);
    assert.deepEqual(huffmanEncode(text, out, 0), want.length);
    assert.deepEqual(toHex(out), toHex(want));
    assert.deepEqual(huffmanDecode(want, 0, want.length, 1000), text);
  });
}

Deno.test("huffman: every octet round-trips", () => {
  const all = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
  const out = new Uint8Array(huffmanLength(all));
  huffmanEncode(all, out, 0);
  assert.deepEqual(huffmanDecode(out, 0, out.length, 1000), all);
});

Deno.test("huffman: malformed strings are decoding errors (RFC 7541 5.2)", () => {
  // EOS (30 ones) inside the string.
  assert.throws(() => huffmanDecode(hex("ffffffff"), 0, 4, 100), /EOS/);
  // Eight bits of padding.
  assert.throws(() => huffmanDecode(hex("ff"), 0, 1, 100), /longer than 7/);
  // "0" (00000) then padding 000: not the EOS prefix.
  assert.throws(() => huffmanDecode(hex("00"), 0, 1, 100), /not the EOS prefix/);
  // Longer than the caller's limit.
  assert.throws(() => huffmanDecode(hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff"), 0, 12, 5), /limit/);
});

Deno.test("huffman: a character above U+00FF is refused", () => {
  assert.throws(() => huffmanLength("é€"), /latin1/);
});
