import assert from "node:assert/strict";
import { meshdClient } from "./debug_flags.ts";
import { MeshdClient } from "./meshd_client.ts";
import { XdsDebugClient } from "./xds_debug_client.ts";

const base = { debugAddress: "localhost:8080", timeout: "30s" };

Deno.test("debug flags: --debug-address by default, --xds-address for xDS, --xds-port completes a bare host", () => {
  const http = meshdClient(base);
  assert.ok(http instanceof MeshdClient);
  assert.equal(http.address, "localhost:8080");
  const bare = meshdClient({ ...base, xdsAddress: "meshd.example", plaintext: true });
  assert.ok(bare instanceof XdsDebugClient);
  assert.equal(bare.address, "meshd.example:15012");
  assert.equal(
    meshdClient({ ...base, xdsAddress: "10.0.0.1", xdsPort: "15010", plaintext: true }).address,
    "10.0.0.1:15010",
  );
  assert.equal(meshdClient({ ...base, xdsAddress: "::1", plaintext: true }).address, "[::1]:15012");
  assert.equal(meshdClient({ ...base, xdsAddress: "[::1]:1", plaintext: true }).address, "[::1]:1");
  assert.match(meshdClient({ ...base, xdsAddress: "h:1", insecure: true }).description, /TLS, not verified/);
});

Deno.test("debug flags: errors name the flag", () => {
  const err = (opts: Record<string, unknown>, re: RegExp) =>
    assert.throws(() => meshdClient({ ...base, ...opts }), re);
  err(
    { xdsLabel: "app=meshd" },
    /--xds-label selects meshd pods through the orchestrator, which --lab replaces/,
  );
  err({ insecure: true }, /--insecure applies to debug requests over xDS/);
  err({ xdsAddress: "h", xdsPort: "70000", plaintext: true }, /--xds-port: "70000" is not a port number/);
  err({ xdsAddress: "h:", plaintext: true }, /--xds-address: "h:" is not host\[:port\]/);
  err({ xdsAddress: "h:1" }, /--xds-address h:1: no root certificate to verify meshd with/);
  err(
    { xdsAddress: "h:1", certDir: "/nonexistent" },
    /--cert-dir: cannot read \/nonexistent\/root-cert\.pem/,
  );
  err({ xdsAddress: "h:1", plaintext: true, insecure: true }, /--plaintext uses no TLS/);
  err({ xdsAddress: "h:1", plaintext: true, xdsTokenFile: "/nonexistent" }, /--xds-token-file: cannot read/);
  err({ timeout: "soon" }, /--timeout: "soon" is not a positive duration/);
});
