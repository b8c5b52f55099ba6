import assert from "node:assert/strict";
import { dialsMtls, mtlsDisabledPorts } from "./auto_mtls.ts";
import type { EffectiveMtlsMode } from "./peer_authentication.ts";

Deno.test("mtlsDisabledPorts: the service ports whose endpoint port is DISABLE, ascending", () => {
  type Case = [string, Record<number, number>, Record<number, EffectiveMtlsMode>, number[]];
  const cases: Case[] = [
    ["workload STRICT", { 8000: 8080 }, { 8080: "STRICT" }, []],
    ["workload PERMISSIVE", { 8000: 8080 }, { 8080: "PERMISSIVE" }, []],
    ["workload DISABLE", { 8000: 8080 }, { 8080: "DISABLE" }, [8000]],
    ["port-level DISABLE on one of two ports", { 8000: 8080, 9000: 9090 }, {
      8080: "DISABLE",
      9090: "STRICT",
    }, [
      8000,
    ]],
    ["two service ports to one DISABLE container port", { 90: 8080, 80: 8080 }, { 8080: "DISABLE" }, [
      80,
      90,
    ]],
    ["no ports", {}, {}, []],
  ];
  for (const [name, ports, modes, want] of cases) {
    assert.deepEqual(mtlsDisabledPorts(ports, (p) => modes[p] ?? "PERMISSIVE"), want, name);
  }
});

Deno.test("dialsMtls: mutual TLS only to a proxied endpoint whose server accepts it at that port", () => {
  type Case = [string, Parameters<typeof dialsMtls>[0], number, boolean];
  const cases: Case[] = [
    ["proxied, no DISABLE", { proxied: true, mtlsDisabledPorts: [] }, 8000, true],
    ["proxied, field missing (older meshd)", { proxied: true }, 8000, true],
    ["proxied, DISABLE at this port", { proxied: true, mtlsDisabledPorts: [8000] }, 8000, false],
    ["proxied, DISABLE at another port", { proxied: true, mtlsDisabledPorts: [9000] }, 8000, true],
    ["not proxied", { proxied: false }, 8000, false],
    ["not proxied, DISABLE", { proxied: false, mtlsDisabledPorts: [8000] }, 8000, false],
  ];
  for (const [name, endpoint, port, want] of cases) assert.equal(dialsMtls(endpoint, port), want, name);
});
