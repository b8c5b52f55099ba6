import assert from "node:assert/strict";
import { cidrContains, parseCidr, parseIp } from "./ip_block.ts";

const contains: [string, string, boolean][] = [
  ["10.0.0.0/8", "10.1.2.3", true],
  ["10.0.0.0/8", "11.0.0.1", false],
  ["10.1.2.3", "10.1.2.3", true],
  ["10.1.2.3", "10.1.2.4", false],
  ["0.0.0.0/0", "192.168.1.1", true],
  ["192.168.1.128/25", "192.168.1.127", false],
  ["192.168.1.128/25", "192.168.1.200", true],
  ["10.0.0.0/8", "::ffff:10.9.9.9", true],
  ["2001:db8::/32", "2001:db8:1::5", true],
  ["2001:db8::/32", "2001:db9::1", false],
  ["::1", "::1", true],
  ["::/0", "10.0.0.1", false],
  ["::ffff:10.0.0.0/104", "10.1.1.1", true],
  ["fe80::1:2:3:4", "fe80:0:0:0:1:2:3:4", true],
  ["::ffff:1.2.3.4", "1.2.3.4", true],
];
for (const [block, ip, want] of contains) {
  Deno.test(`cidrContains ${block} ${ip}`, () => {
    const b = parseCidr(block);
    const i = parseIp(ip);
    assert.ok(b && i);
    assert.equal(cidrContains(b, i), want);
  });
}

for (
  const bad of [
    "",
    "10.0.0",
    "10.0.0.256",
    "10.0.0.0/33",
    "1::2::3",
    "1:2:3:4:5:6:7:8:9",
    "x",
    "01.2.3.4",
    "1.2.3.4.5",
    "1..2.3",
    "1.2.3.4.",
    ".1.2.3",
    "1.2.3.1000",
    "1.2.3.-1",
    " 1.2.3.4",
    "1.2.3.00",
    "::ffff:1.2.3.04",
  ]
) {
  Deno.test(`parseCidr rejects ${JSON.stringify(bad)}`, () => assert.equal(parseCidr(bad), undefined));
}

for (
  const [text, bytes] of [["0.0.0.0", [0, 0, 0, 0]], ["255.255.255.255", [255, 255, 255, 255]], ["10.0.0.5", [
    10,
    0,
    0,
    5,
  ]], ["100.64.10.1", [100, 64, 10, 1]]] as const
) {
  Deno.test(`parseIp reads ${text}`, () => assert.deepEqual([...parseIp(text) ?? []], bytes));
}
