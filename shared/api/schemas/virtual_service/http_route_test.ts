import { type Case, fwd, testCases } from "./_test_support.ts";

/** VirtualService rules on the HTTP rule itself (timeout). */
const cases: Case[] = [
  { name: "timeout: Go-style ok", spec: fwd({ timeout: "1m30s" }) },
  { name: "timeout: fractional seconds ok", spec: fwd({ timeout: "0.5s" }) },
  {
    name: "timeout: needs a unit",
    spec: fwd({ timeout: "10" }),
    want: { path: "spec.http[0].timeout", message: '"10" is not a duration' },
  },
  {
    name: "timeout: at least 1ms",
    spec: fwd({ timeout: "0s" }),
    want: { path: "spec.http[0].timeout", message: "at least 1ms" },
  },
];

testCases(cases);
