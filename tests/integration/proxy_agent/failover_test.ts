/**
 * Proxies given several meshd addresses (issue 14, item 4): ADS moves to the next replica when its
 * stream breaks or a connect fails, keeping what it holds (nothing re-applied when the replicas serve
 * the same config); CSRs go to the next address when one has no meshd, and a refusal is final.
 * The lab test with SIGKILL under load is tests/e2e/meshd_failover_test.ts.
 */
import assert from "node:assert/strict";
import { AdsClient } from "../../../proxy/agent/ads_client.ts";
import { ProxyAgent } from "../../../proxy/agent/agent.ts";
import { createCsr } from "../../../proxy/agent/certificate_manager.ts";
import { CsrError, GrpcCsrClient } from "../../../proxy/agent/csr_client.ts";
import { MESHD_NAME, SERVICE, startCa, startMeshd, startRecordingCa, waitFor } from "../meshd_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
// A port with nothing listening on it (connections are refused), below the ephemeral range, so that
// the meshd and CA this test starts on port 0 cannot be given it.
import { freePort } from "../../../shared/internal/testing/free_port.ts";

// Sanitizers on, as in csr_client_test.ts.
const grpcTest = (name: string, fn: () => Promise<void>) => Deno.test({ name, fn });

const NODE = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" };

const DENY = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-get, namespace: foo}
spec:
  selector: {matchLabels: {app: sleep}}
  action: DENY
  rules: [{to: [{operation: {methods: [GET]}}]}]
`;

grpcTest(
  "ADS: skips an address without meshd, fails over to the next replica keeping its config, and takes its pushes",
  async () => {
    const dir = await Deno.makeTempDir();
    // The proxy's workload carries the injected tlsMode label, as an injected pod does: without it its
    // proxied flag follows its connection, so replica B's first answer (before B saw it connect) and B's
    // push a moment later would differ, and the client would re-apply for a reason that is not failover.
    const injected = SERVICE.replace(
      "labels: {app: sleep}",
      "labels: {app: sleep, security.istio.io/tlsMode: istio}",
    );
    assert.notEqual(injected, SERVICE);
    await Deno.writeTextFile(`${dir}/services.yaml`, injected);
    const a = await startMeshd(dir);
    const b = await startMeshd(dir);
    const dead = `127.0.0.1:${freePort()}`;
    const addrA = `127.0.0.1:${a.grpcPort}`;
    const addrB = `127.0.0.1:${b.grpcPort}`;
    const connects: number[] = [];
    const client = new AdsClient({
      address: `${dead},${addrA},${addrB}`,
      node: NODE,
      plaintext: true,
      backoff: { initialMs: 50, maxMs: 400 },
      hooks: { onConnect: (id) => connects.push(id) },
    });
    const updates: string[] = [];
    client.onUpdate((_c, typeUrl) => updates.push(typeUrl));
    let stopA = true;
    try {
      client.start();
      await waitFor(() => "foo/httpbin" in client.config.services && client.connected, 5000);
      assert.equal(client.status().address, addrA, "the refused address was skipped");
      assert.equal(a.server.ads.streams().length, 1);
      assert.equal(b.server.ads.streams().length, 0);
      const held = client.config;
      const before = updates.length;

      await a.stop();
      stopA = false;
      await waitFor(() => client.status().address === addrB && client.connected, 5000);
      await waitFor(
        () => b.server.ads.streams()[0]?.types.every((t) => t.lastSentNonce === t.lastAckedNonce),
        3000,
      );
      assert.equal(client.config, held, "the same resources: nothing re-applied");
      assert.equal(updates.length, before, "no update published by the reconnect");
      assert.equal(connects.length, 2);

      await Deno.writeTextFile(`${dir}/authz.yaml`, DENY);
      await waitFor(() => "foo/deny-get" in client.config.authorizations, 5000);
      assert.equal(client.status().address, addrB);
    } finally {
      await client.stop();
      if (stopA) await a.stop();
      await b.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

grpcTest(
  "GrpcCsrClient: an address without meshd or an unavailable CA sends the CSR to the next; a refusal is final",
  async () => {
    const dir = await Deno.makeTempDir();
    const ca = await startCa(`${dir}/ca`);
    const down = await startRecordingCa(ca);
    const up = await startRecordingCa(ca);
    down.failing.on = true;
    try {
      const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const { csrPem } = await createCsr("spiffe://cluster.local/ns/foo/sa/sleep");
      const request = { csr: csrPem, validityDuration: 0, metadata: {} };
      const dead = `127.0.0.1:${freePort()}`;
      const client = new GrpcCsrClient({
        address: `${dead},127.0.0.1:${down.port},127.0.0.1:${up.port}`,
        rootsPem: ca.trustBundlePem,
        timeoutMs: 3000,
      });
      const chain = await client.createCertificate(request, { token });
      assert.equal(chain.length, 2, "leaf and root");
      assert.deepEqual([down.seen.length, up.seen.length], [1, 1]);

      // The address that answered is tried first next time; its refusal does not go elsewhere.
      const bad = token.slice(0, -4) + "AAAA";
      const refused = await client.createCertificate(request, { token: bad }).catch((e) => e);
      assert.ok(refused instanceof CsrError, String(refused));
      assert.equal(refused.code, 16);
      assert.deepEqual([down.seen.length, up.seen.length], [1, 2]);

      // No meshd anywhere: one error naming every address.
      up.failing.on = true;
      const none = await client.createCertificate(request, { token }).catch((e) => e);
      assert.ok(none instanceof CsrError, String(none));
      assert.equal(none.code, 14);
      assert.match(none.message, new RegExp(`no meshd answered: .*${dead}.*${down.port}`));
    } finally {
      down.stop();
      up.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

grpcTest(
  "secure naming per replica: an address whose meshd chains to another root gets neither the token nor the ADS stream",
  async () => {
    const dir = await Deno.makeTempDir();
    await Deno.mkdir(`${dir}/config`);
    await Deno.writeTextFile(`${dir}/config/services.yaml`, SERVICE);
    const ca = await startCa(`${dir}/ca`);
    const foreign = await startCa(`${dir}/foreign`);
    const good = await startMeshd(`${dir}/config`, { ca });
    // Serving certificates for the same name (MESHD_NAME), from a root the proxy does not trust.
    const impostor = await startMeshd(`${dir}/config`, { ca: foreign });
    const impostorCa = await startRecordingCa(foreign);
    const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
    await Deno.writeTextFile(`${dir}/istio-token`, token);
    const fast = { initialMs: 50, maxMs: 400 };
    const agent = new ProxyAgent({
      node: NODE,
      discoveryAddress: `127.0.0.1:${impostor.securePort},127.0.0.1:${good.securePort}`,
      serverName: MESHD_NAME,
      rootsPem: ca.trustBundlePem,
      ca: {
        tokenFile: `${dir}/istio-token`,
        address: `127.0.0.1:${impostorCa.port},127.0.0.1:${good.securePort}`,
        backoff: fast,
      },
      backoff: fast,
    });
    try {
      await agent.start();
      const s = await within(agent.ready(), 10_000, "ready");
      assert.equal(s.certificate!.spiffeId, "spiffe://cluster.local/ns/foo/sa/sleep");
      assert.equal(agent.status().ads!.address, `127.0.0.1:${good.securePort}`);
      assert.equal(impostorCa.seen.length, 0, "the bootstrap token never reached the impostor's CA");
      assert.deepEqual([impostor.seen.length, impostor.server.ads.streams().length], [0, 0]);
      assert.equal(good.seen.length, 1);
    } finally {
      await agent.stop();
      impostorCa.stop();
      await impostor.stop();
      await good.stop();
      await ca.stop();
      await foreign.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
