import assert from "node:assert/strict";
import {
  INT32_MAX,
  INT32_MIN,
  parseGoBool,
  parseGoDuration,
  parseGoInt,
  parseListenAddress,
  parseOneOf,
} from "./go_values.ts";

const bools: [string, boolean | undefined][] = [
  ["1", true],
  ["t", true],
  ["T", true],
  ["TRUE", true],
  ["true", true],
  ["True", true],
  ["0", false],
  ["f", false],
  ["F", false],
  ["FALSE", false],
  ["false", false],
  ["False", false],
  ["yes", undefined],
  ["", undefined],
  ["tRUE", undefined],
];
Deno.test("parseGoBool: Go's strconv.ParseBool", () => {
  for (const [text, want] of bools) {
    const r = parseGoBool(text);
    assert.equal(r.ok ? r.value : undefined, want, text);
  }
});

Deno.test("parseGoDuration: milliseconds, Go's largest duration, overflow", () => {
  const ms = (t: string) => {
    const r = parseGoDuration(t);
    return r.ok ? r.value : r.reason;
  };
  assert.equal(ms("30s"), 30_000);
  assert.equal(ms("2562047h47m16.854775807s"), 9_223_372_036_854.775);
  assert.match(String(ms("2562047h47m16.854775808s")), /out of range/);
  assert.match(String(ms("5")), /missing unit/);
  assert.match(String(ms("")), /not a duration/);
});

Deno.test("parseListenAddress: host:port, [v6]:port, :port", () => {
  const ok = (t: string) => {
    const r = parseListenAddress(t);
    return r.ok ? r.value : r.reason;
  };
  assert.deepEqual(ok(":15010"), { host: "", port: 15010 });
  assert.deepEqual(ok("0.0.0.0:1"), { host: "0.0.0.0", port: 1 });
  assert.deepEqual(ok("[fe80::1%eth0]:2"), { host: "fe80::1%eth0", port: 2 });
  assert.match(String(ok("")), /is not an address/);
  assert.match(String(ok(":")), /a port is a number/);
});

Deno.test("parseGoInt: Go's base-0 syntax and the bounds given", () => {
  const int = (t: string, min = INT32_MIN, max = INT32_MAX) => {
    const r = parseGoInt(t, min, max);
    return r.ok ? r.value : r.reason;
  };
  assert.equal(int("0x2a"), 42n);
  assert.equal(int("052"), 42n);
  assert.equal(int("1_000"), 1000n);
  assert.equal(int("-3"), -3n);
  assert.match(String(int("-3", 0n, 10n)), /not an unsigned integer/);
  assert.match(String(int("2147483648")), /out of range -2147483648..2147483647/);
  assert.match(String(int("1.5")), /not an integer/);
});

Deno.test("parseOneOf: a value of the set, else a reason naming every accepted value", () => {
  assert.deepEqual(parseOneOf("TPROXY", ["REDIRECT", "TPROXY"]), { ok: true, value: "TPROXY" });
  assert.deepEqual(parseOneOf("tproxy", ["REDIRECT", "TPROXY"]), {
    ok: false,
    reason: "is not accepted; use REDIRECT, TPROXY",
  });
});
