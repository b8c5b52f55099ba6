import assert from "node:assert/strict";
import { hostOf, IP_TARGET_SNI, meshdRoots, secureChannel } from "./meshd_channel.ts";

const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

Deno.test("hostOf: host:port, [v6]:port, bare hosts", () => {
  assert.equal(hostOf("meshd.mesh-system.svc:15012"), "meshd.mesh-system.svc");
  assert.equal(hostOf("127.0.0.1:15012"), "127.0.0.1");
  assert.equal(hostOf("[::1]:15012"), "::1");
  assert.equal(hostOf("::1"), "::1");
  assert.equal(hostOf("localhost"), "localhost");
});

Deno.test("secureChannel: a server name overrides the target name; an IP target gets a placeholder SNI", () => {
  const named = secureChannel("127.0.0.1:15012", { rootsPem: PEM, serverName: "meshd.mesh-system.svc" });
  assert.equal(named.options["grpc.ssl_target_name_override"], "meshd.mesh-system.svc");
  assert.equal(named.options["grpc.default_authority"], "meshd.mesh-system.svc");
  const ip = secureChannel("127.0.0.1:15012", { rootsPem: PEM });
  assert.equal(ip.options["grpc.ssl_target_name_override"], IP_TARGET_SNI);
  const dns = secureChannel("localhost:15012", { rootsPem: PEM });
  assert.deepEqual(dns.options, {});
});

Deno.test("secureChannel: roots are required and must be PEM (never the process-wide default bundle)", () => {
  assert.throws(() => secureChannel("127.0.0.1:1", { rootsPem: "" }), /roots to verify meshd must be PEM/);
});

Deno.test("meshdRoots: the configured roots and the received bundle, each certificate once", () => {
  const a = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  const b = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";
  assert.equal(meshdRoots(a), a, "nothing received yet");
  assert.equal(meshdRoots(a, b + a), a + b, "a rotated bundle: the new root is added, the old one kept once");
  assert.equal(meshdRoots(a.replace(/\n/g, "\r\n"), a), a, "CRLF files count as the same certificate");
  assert.equal(meshdRoots(a, ""), a);
});
