import assert from "node:assert/strict";
import { ascii, latin1 } from "./chars.ts";
import { CHUNK_DATA, CHUNK_DONE, CHUNK_NEED_MORE, ChunkedDecoder } from "./chunked.ts";
import { HttpError } from "./http_head.ts";

/**
 * Runs a decoder over `text` in pieces of `step` bytes. Returns the decoded data, the index where the
 * body ended (-1 if it did not), or the error.
 */
function decode(text: string, step: number, emitData: boolean) {
  const bytes = ascii(text);
  const dec = new ChunkedDecoder(emitData);
  let data = "";
  try {
    for (let start = 0; start < bytes.length; start += step) {
      const end = Math.min(start + step, bytes.length);
      let i = start;
      while (i < end) {
        const next = dec.step(bytes, i, end);
        if (dec.result === CHUNK_DATA) data += latin1(bytes, dec.dataStart, next);
        i = next;
        if (dec.result === CHUNK_DONE) return { ok: true as const, data, end: i };
        if (dec.result === CHUNK_NEED_MORE) assert.equal(i, end);
      }
    }
    return { ok: true as const, data, end: -1 };
  } catch (e) {
    if (!(e instanceof HttpError)) throw e;
    return { ok: false as const, status: e.status };
  }
}

function decodeAll(text: string) {
  const runs = [];
  for (const emit of [true, false]) {
    for (const step of [text.length || 1, 1, 3]) {
      const r = decode(text, step, emit);
      runs.push(r.ok && !emit ? { ...r, data: "" } : r);
    }
  }
  // Same outcome whatever the piece size; same end with and without data runs.
  for (const r of runs.slice(1, 3)) assert.deepEqual(r, runs[0]);
  for (const r of runs.slice(4)) assert.deepEqual(r, runs[3]);
  if (runs[0].ok) assert.equal(runs[3].ok && runs[3].end, runs[0].end);
  else assert.deepEqual(runs[3], runs[0]);
  return runs[0];
}

Deno.test("valid chunked bodies", async (t) => {
  const cases: [string, string, string][] = [
    ["one chunk", "5\r\nhello\r\n0\r\n\r\n", "hello"],
    ["several chunks", "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n", "hello world"],
    ["empty body", "0\r\n\r\n", ""],
    ["upper and lower case hex", "A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij"],
    ["leading zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello"],
    ["extension without value", "5;foo\r\nhello\r\n0\r\n\r\n", "hello"],
    ["extension with token value", "5;foo=bar\r\nhello\r\n0;last\r\n\r\n", "hello"],
    ["extensions with BWS", "5 ; a = b ;c\r\nhello\r\n0\r\n\r\n", "hello"],
    ["quoted extension value with escapes", '5;a="q \\" ; x"\r\nhello\r\n0\r\n\r\n', "hello"],
    ["data containing CRLF", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n"],
    ["trailer fields", "5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Other:\r\n\r\n", "hello"],
    ["binary data", "3\r\n\x00\xff\x7f\r\n0\r\n\r\n", "\x00\xff\x7f"],
  ];
  for (const [name, text, data] of cases) {
    await t.step(name, () => {
      const r = decodeAll(text);
      assert.ok(r.ok);
      assert.equal(r.data, data);
      assert.equal(r.end, text.length);
    });
  }
});

Deno.test("the end of a chunked body is found exactly; what follows is the next message", () => {
  const body = "3\r\nabc\r\n0\r\n\r\n";
  const r = decodeAll(body + "GET / HTTP/1.1\r\n");
  assert.ok(r.ok);
  assert.equal(r.end, body.length);
});

Deno.test("an incomplete body needs more", () => {
  for (const text of ["5\r\nhel", "5\r\nhello\r\n", "5\r\nhello\r\n0\r\n", "5\r\nhello\r\n0\r\nX: y\r\n"]) {
    const r = decodeAll(text);
    assert.ok(r.ok);
    assert.equal(r.end, -1, JSON.stringify(text));
  }
});

Deno.test("malformed chunked bodies", async (t) => {
  const cases: [string, string][] = [
    ["empty chunk size", "\r\nhello\r\n0\r\n\r\n"],
    ["non-hex size", "x\r\nhello\r\n0\r\n\r\n"],
    ["negative size", "-5\r\nhello\r\n0\r\n\r\n"],
    ["signed size", "+5\r\nhello\r\n0\r\n\r\n"],
    ["0x prefix", "0x5\r\nhello\r\n0\r\n\r\n"],
    ["space before size", " 5\r\nhello\r\n0\r\n\r\n"],
    ["trailing whitespace without extension", "5 \r\nhello\r\n0\r\n\r\n"],
    ["size over 2^53", "FFFFFFFFFFFFFFFFF\r\n"],
    ["bare LF after size", "5\nhello\r\n0\r\n\r\n"],
    ["bare CR after size", "5\rhello\r\n0\r\n\r\n"],
    ["data longer than size", "5\r\nhelloX\r\n0\r\n\r\n"],
    ["data shorter than size", "5\r\nhell\r\n0\r\n\r\n"],
    ["bare LF after data", "5\r\nhello\n0\r\n\r\n"],
    ["extension without name", "5;=x\r\nhello\r\n0\r\n\r\n"],
    ["extension name with separator", "5;a/b\r\nhello\r\n0\r\n\r\n"],
    ["extension value with space inside", "5;a=b c\r\nhello\r\n0\r\n\r\n"],
    ["extension with empty value", "5;a=\r\nhello\r\n0\r\n\r\n"],
    ["unterminated quoted value", '5;a="abc\r\nhello\r\n0\r\n\r\n'],
    ["control character in quoted value", '5;a="a\x01"\r\nhello\r\n0\r\n\r\n'],
    ["garbage after quoted value", '5;a="x"y\r\nhello\r\n0\r\n\r\n'],
    ["extension line over 4 KiB", `5;a=${"b".repeat(5000)}\r\nhello\r\n0\r\n\r\n`],
    ["trailer obs-fold", "0\r\nX: a\r\n b\r\n\r\n"],
    ["trailer name with space", "0\r\nBad Name: x\r\n\r\n"],
    ["trailer without colon", "0\r\nBadName\r\n\r\n"],
    ["trailer with control character", "0\r\nX: a\x01\r\n\r\n"],
    ["trailer bare LF", "0\r\nX: y\n\r\n"],
    ["last chunk not ended by CRLF", "0\r\n\rX"],
    ["trailer section over 60 KiB", "0\r\n" + "X: yyyyyyyyyyyyyyyyyyyyyy\r\n".repeat(2500) + "\r\n"],
  ];
  for (const [name, text] of cases) {
    await t.step(name, () => {
      const r = decodeAll(text);
      assert.equal(r.ok, false, JSON.stringify(r));
      assert.equal(r.ok ? 0 : r.status, 400);
    });
  }
});

Deno.test("a response decoder reports 502, and is reusable after reset", () => {
  const dec = new ChunkedDecoder(false, 502);
  assert.throws(() => dec.step(ascii("z"), 0, 1), (e: unknown) => e instanceof HttpError && e.status === 502);
  dec.reset();
  const body = ascii("1\r\na\r\n0\r\n\r\n");
  assert.equal(dec.step(body, 0, body.length), body.length);
  assert.equal(dec.done, true);
});
