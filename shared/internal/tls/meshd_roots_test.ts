import assert from "node:assert/strict";
import type { PeerCertificate } from "node:tls";
import { hostOf, IP_TARGET_SNI, meshdIdentity } from "./meshd_roots.ts";

/** A peer certificate as node:tls's check reads it: only its SANs. */
const peer = (san: string) => ({ subject: {}, subjectaltname: san }) as unknown as PeerCertificate;

Deno.test("meshdIdentity: the server name whatever is dialled; else the DNS host; else the IP against the IP SANs", () => {
  assert.deepEqual(meshdIdentity("10.0.0.1:15012", "meshd.mesh-system.svc"), {
    servername: "meshd.mesh-system.svc",
  });
  assert.deepEqual(meshdIdentity("meshd.example:15012"), { servername: "meshd.example" });
  for (const address of ["10.0.0.1:15012", "[fd00::1]:15012"]) {
    const ip = meshdIdentity(address);
    assert.equal(ip.servername, IP_TARGET_SNI, address);
    const host = hostOf(address);
    assert.equal(ip.checkServerIdentity!(IP_TARGET_SNI, peer(`IP Address:${host}`)), undefined, address);
    assert.ok(ip.checkServerIdentity!(IP_TARGET_SNI, peer("IP Address:10.9.9.9")) instanceof Error, address);
    assert.ok(ip.checkServerIdentity!(IP_TARGET_SNI, peer(`DNS:${IP_TARGET_SNI}`)) instanceof Error, address);
  }
});
