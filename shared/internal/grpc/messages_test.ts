import assert from "node:assert/strict";
import {
  messagePrefix,
  MessageReader,
  percentDecodeGrpcMessage,
  percentEncodeGrpcMessage,
  putMessagePrefix,
  Status,
} from "./messages.ts";

const msg = (bytes: number[], flag = 0): Uint8Array => {
  const p = messagePrefix(bytes.length);
  p[0] = flag;
  return new Uint8Array([...p, ...bytes]);
};

Deno.test("messages: whole, split at every octet, several per chunk, empty", () => {
  const wire = new Uint8Array([...msg([1, 2, 3]), ...msg([]), ...msg([9])]);
  for (let cut = 0; cut <= wire.length; cut++) {
    const r = new MessageReader(100, "");
    const a = r.push(wire.subarray(0, cut));
    const b = r.push(wire.subarray(cut));
    assert.equal(a.error ?? b.error, undefined);
    assert.deepEqual([...a.messages, ...b.messages].map((m) => [...m]), [[1, 2, 3], [], [9]], `cut ${cut}`);
    assert.equal(r.partial, false);
  }
  const r = new MessageReader(100, "");
  r.push(msg([1, 2, 3]).subarray(0, 6));
  assert.equal(r.partial, true);
});

const refused: {
  name: string;
  wire: Uint8Array;
  max?: number;
  encoding?: string;
  code: number;
  details: RegExp;
}[] = [
  { name: "compressed under identity", wire: msg([1], 1), code: Status.INTERNAL, details: /identity/ },
  {
    name: "compressed under gzip",
    wire: msg([1], 1),
    encoding: "gzip",
    code: Status.UNIMPLEMENTED,
    details: /gzip/,
  },
  { name: "an unknown flag", wire: msg([1], 2), code: Status.INTERNAL, details: /flag 2/ },
  {
    name: "over the limit",
    wire: msg([1, 2, 3, 4, 5]),
    max: 4,
    code: Status.RESOURCE_EXHAUSTED,
    details: /5 vs\. 4/,
  },
  // The limit is checked on the prefix: 4 GiB announced, 5 octets sent, nothing buffered.
  {
    name: "a 4 GiB prefix",
    wire: new Uint8Array([0, 255, 255, 255, 255]),
    code: Status.RESOURCE_EXHAUSTED,
    details: /4294967295/,
  },
];
for (const c of refused) {
  Deno.test(`messages: refused: ${c.name}`, () => {
    const r = new MessageReader(c.max ?? 4 * 1024 * 1024, c.encoding ?? "");
    const { messages, error } = r.push(c.wire);
    assert.deepEqual(messages, []);
    assert.equal(error?.code, c.code);
    assert.match(error!.details, c.details);
    assert.deepEqual(r.push(msg([1])), { messages: [] }, "nothing is read after an error");
  });
}

Deno.test("messages: at the limit is accepted", () => {
  assert.deepEqual(new MessageReader(4, "").push(msg([1, 2, 3, 4])).error, undefined);
});

Deno.test("messages: memory follows the octets received, not the length a prefix announces", () => {
  const announced = 256 * 1024 * 1024;
  const r = new MessageReader(announced, "");
  const before = Deno.memoryUsage().external;
  const first = new Uint8Array([...messagePrefix(announced), 7]); // the prefix and one octet
  assert.deepEqual(r.push(first), { messages: [] });
  const grown = Deno.memoryUsage().external - before;
  assert.ok(grown < 16 * 1024 * 1024, `${grown} octets of external memory for one octet received`);
  assert.ok(r.partial);
  // The message still comes out whole, from parts.
  const small = new MessageReader(10, "");
  const wire = msg([1, 2, 3, 4, 5, 6]);
  assert.deepEqual(small.push(wire.subarray(0, 7)).messages, []);
  assert.deepEqual(small.push(wire.subarray(7, 9)).messages, []);
  assert.deepEqual(small.push(wire.subarray(9)).messages.map((m) => [...m]), [[1, 2, 3, 4, 5, 6]]);
});

Deno.test("grpc-message is percent-encoded as the spec says", () => {
  assert.equal(percentEncodeGrpcMessage("ok: 100%"), "ok: 100%25");
  assert.equal(percentEncodeGrpcMessage("a\nb é"), "a%0Ab %C3%A9");
});

Deno.test("percentEncodeGrpcMessage: bytes outside 0x20-0x7E and % are %XX of their UTF-8", () => {
  const table: [string, string][] = [
    ["RBAC: access denied", "RBAC: access denied"],
    ["Jwt verification fails", "Jwt verification fails"],
    ["100%", "100%25"],
    ["a\r\nb", "a%0D%0Ab"],
    ["tab\there", "tab%09here"],
    ["é", "%C3%A9"],
    ["~ \x7f", "~ %7F"],
    ["", ""],
  ];
  for (const [text, encoded] of table) {
    assert.equal(percentEncodeGrpcMessage(text), encoded, JSON.stringify(text));
    assert.equal(percentDecodeGrpcMessage(encoded), text, encoded);
  }
  // A malformed escape stays as received (gRPC: decode what can be decoded).
  assert.equal(percentDecodeGrpcMessage("50%zz"), "50%zz");
  assert.equal(percentDecodeGrpcMessage("end%4"), "end%4");
});

Deno.test("messages: putMessagePrefix writes the prefix into a shared buffer, big-endian, lengths up to 2^32-1", () => {
  for (const length of [0, 1, 255, 256, 65_535, 16_777_216, 0xffff_ffff]) {
    const out = new Uint8Array(8).fill(0xee);
    putMessagePrefix(out, length);
    assert.equal(out[0], 0, "not compressed");
    assert.equal(new DataView(out.buffer).getUint32(1), length);
    assert.deepEqual([...out.subarray(5)], [0xee, 0xee, 0xee], "nothing after the prefix is touched");
  }
});
