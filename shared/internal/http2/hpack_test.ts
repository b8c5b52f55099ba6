import assert from "node:assert/strict";
import type { HeaderList } from "./headers.ts";
import { hex, toHex } from "./hex_test_support.ts";
import { HpackDecoder, HpackEncoder } from "./hpack.ts";

const REQ1: HeaderList = [[":method", "GET"], [":scheme", "http"], [":path", "/"], [
  ":authority",
  "www.example.com",
]];
const REQ2: HeaderList = [...REQ1, ["cache-control", "no-cache"]];
const REQ3: HeaderList = [
  [":method", "GET"],
  [":scheme", "https"],
  [":path", "/index.html"],
  [":authority", "www.example.com"],
  ["custom-key", "custom-value"],
];
const RESP1: HeaderList = [
  [":status", "302"],
  ["cache-control", "private"],
  ["date", "Mon, 21 Oct 2013 20:13:21 GMT"],
  ["location", "https://www.example.com"],
];
const RESP2: HeaderList = [[":status", "307"], ...RESP1.slice(1)];
const RESP3: HeaderList = [
  [":status", "200"],
  ["cache-control", "private"],
  ["date", "Mon, 21 Oct 2013 20:13:22 GMT"],
  ["location", "https://www.example.com"],
  ["content-encoding", "gzip"],
  ["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"],
];

/** RFC 7541 Appendix C: a sequence of blocks on one connection, the table size, and whether our encoder's choices match. */
interface Sequence {
  name: string;
  tableSize: number;
  blocks: { list: HeaderList; hex: string; tableSize: number; encoderMatches: boolean }[];
}

const SEQUENCES: Sequence[] = [
  {
    name: "C.3 requests without Huffman",
    tableSize: 4096,
    blocks: [
      {
        list: REQ1,
        hex: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        tableSize: 57,
        encoderMatches: false,
      },
      { list: REQ2, hex: "8286 84be 5808 6e6f 2d63 6163 6865", tableSize: 110, encoderMatches: false },
      {
        list: REQ3,
        hex: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        tableSize: 164,
        encoderMatches: false,
      },
    ],
  },
  {
    name: "C.4 requests with Huffman",
    tableSize: 4096,
    blocks: [
      { list: REQ1, hex: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", tableSize: 57, encoderMatches: true },
      { list: REQ2, hex: "8286 84be 5886 a8eb 1064 9cbf", tableSize: 110, encoderMatches: true },
      {
        list: REQ3,
        hex: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        tableSize: 164,
        encoderMatches: true,
      },
    ],
  },
  {
    name: "C.5 responses without Huffman (table 256)",
    tableSize: 256,
    blocks: [
      {
        list: RESP1,
        hex: "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a " +
          "3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        tableSize: 222,
        encoderMatches: false,
      },
      { list: RESP2, hex: "4803 3330 37c1 c0bf", tableSize: 222, encoderMatches: false },
    ],
  },
  {
    name: "C.6 responses with Huffman (table 256)",
    tableSize: 256,
    blocks: [
      {
        list: RESP1,
        hex: "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e " +
          "919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        tableSize: 222,
        encoderMatches: true,
      },
      { list: RESP2, hex: "4883 640e ffc1 c0bf", tableSize: 222, encoderMatches: true },
      {
        list: RESP3,
        hex: "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 " +
          "821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed " +
          "4ee5 b106 3d50 07",
        tableSize: 215,
        // Our encoder never indexes set-cookie (RFC 7541 7.1.3), the RFC's example does.
        encoderMatches: false,
      },
    ],
  },
];

for (const seq of SEQUENCES) {
  Deno.test(`hpack: RFC 7541 Appendix ${seq.name}: decoder`, () => {
    const dec = new HpackDecoder(seq.tableSize, 100, 64 * 1024);
    for (const b of seq.blocks) {
      assert.deepEqual(dec.decode(hex(b.hex)), b.list);
      assert.equal(dec.table.size, b.tableSize);
    }
  });
  Deno.test(`hpack: RFC 7541 Appendix ${seq.name}: encoder`, () => {
    const enc = new HpackEncoder(seq.tableSize);
    const dec = new HpackDecoder(seq.tableSize, 100, 64 * 1024);
    for (const b of seq.blocks) {
      const block = enc.encode(b.list);
      if (b.encoderMatches) assert.equal(toHex(block), toHex(hex(b.hex)));
      assert.deepEqual(dec.decode(block), b.list);
    }
  });
}

Deno.test("hpack: RFC 7541 C.2 field representations", () => {
  const cases: [string, HeaderList, number][] = [
    [
      "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
      [["custom-key", "custom-header"]],
      55,
    ],
    ["040c 2f73 616d 706c 652f 7061 7468", [[":path", "/sample/path"]], 0],
    ["1008 7061 7373 776f 7264 0673 6563 7265 74", [["password", "secret"]], 0],
    ["82", [[":method", "GET"]], 0],
  ];
  for (const [h, list, size] of cases) {
    const dec = new HpackDecoder(4096, 100, 64 * 1024);
    assert.deepEqual(dec.decode(hex(h)), list);
    assert.equal(dec.table.size, size);
  }
});

Deno.test("hpack: RFC 7541 C.1 integers (1337 with a 5-bit prefix)", () => {
  // A dynamic table size update of 1337 (prefix 001, 5 bits): 3f 9a 0a.
  const dec = new HpackDecoder(4096, 100, 64 * 1024);
  dec.decode(hex("3f9a0a"));
  assert.equal(dec.table.maxSize, 1337);
});

Deno.test("hpack: malformed blocks are COMPRESSION_ERRORs", () => {
  const bad: [string, RegExp][] = [
    ["80", /index 0/],
    ["be", /out of range/], // index 62 with an empty dynamic table
    ["ff ff ff ff ff 0f", /too large/], // an index over 2^31
    ["3fe21f", /over the advertised/], // table size update to 4,097
    ["82 20", /after a field/], // size update after a field
    ["40 0a 6375", /longer than the block/],
    ["40 81 ff 81 ff", /padding/], // Huffman garbage
    ["3f", /truncated/],
  ];
  for (const [h, err] of bad) {
    const dec = new HpackDecoder(4096, 100, 64 * 1024);
    assert.throws(() => dec.decode(hex(h)), err, h);
  }
});

Deno.test("hpack: lists over the limits are cut and flagged, the table stays in step", () => {
  const enc = new HpackEncoder();
  const dec = new HpackDecoder(4096, 3, 200);
  const big: HeaderList = [[":method", "GET"], ["a", "1"], ["b", "2"], ["c", "3"], ["d", "4"]];
  assert.deepEqual(dec.decode(enc.encode(big)), big.slice(0, 3));
  assert.equal(dec.oversized, true);
  // The dropped fields were indexed all the same: the next block refers to them.
  assert.deepEqual(dec.decode(enc.encode([["d", "4"]])), [["d", "4"]]);
  assert.equal(dec.oversized, false);
  const long: HeaderList = [["x", "y".repeat(300)]];
  assert.deepEqual(dec.decode(enc.encode(long)), []);
  assert.equal(dec.oversized, true);
});

Deno.test("hpack: the encoder announces a smaller table from the peer's SETTINGS", () => {
  const enc = new HpackEncoder();
  const dec = new HpackDecoder(4096, 100, 64 * 1024);
  dec.decode(enc.encode(REQ3));
  enc.setPeerTableSize(0);
  dec.decode(enc.encode(REQ3));
  assert.equal(dec.table.maxSize, 0);
  assert.equal(dec.table.length, 0);
});

Deno.test("hpack: secrets are never indexed", () => {
  const enc = new HpackEncoder();
  const block = enc.encode([["authorization", "Bearer x"]]);
  assert.equal(block[0] & 0xf0, 0x10);
});
