import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import type { RuntimeSnapshot } from "../../../proxy/runtime/snapshot.ts";
import { ProxyAgent, type ProxyAgentOptions } from "../../../proxy/agent/agent.ts";
import { SUBSCRIBED } from "../../../proxy/agent/resources.ts";
import { type Meshd, SERVICE, startCa, startMeshd, waitFor } from "../meshd_support.ts";
import type { CertificateAuthority } from "../../../meshd/ca/mod.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

const grpcTest = (name: string, fn: () => Promise<void>) => Deno.test({ name, fn });

const NODE = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" };
const FAST = { initialMs: 50, maxMs: 400 };

/** meshd with its CA and mutual-TLS port, a bootstrap token for foo/sleep, and agents to clean up. */
async function mesh() {
  const dir = await Deno.makeTempDir({ prefix: "agent-test-" });
  await Deno.mkdir(`${dir}/config`);
  await Deno.writeTextFile(`${dir}/config/services.yaml`, SERVICE);
  let ca: CertificateAuthority = await startCa(`${dir}/ca`);
  let meshd: Meshd = await startMeshd(`${dir}/config`, { ca });
  const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
  await Deno.writeTextFile(`${dir}/istio-token`, token);
  await Deno.writeTextFile(`${dir}/root-cert.pem`, ca.trustBundlePem);
  const agents: ProxyAgent[] = [];
  return {
    get ca() {
      return ca;
    },
    get meshd() {
      return meshd;
    },
    agent(extra: Partial<ProxyAgentOptions> & { ttlSeconds?: number } = {}) {
      const { ttlSeconds, ...rest } = extra;
      const a = new ProxyAgent({
        node: NODE,
        discoveryAddress: `127.0.0.1:${meshd.securePort}`,
        rootCertFile: `${dir}/root-cert.pem`,
        ca: { tokenFile: `${dir}/istio-token`, ttlSeconds, backoff: FAST },
        backoff: FAST,
        ...rest,
      });
      agents.push(a);
      return a;
    },
    /** Stops meshd and its CA, then starts both again on the same ports and ROOT_CA_DIR. */
    async stopMeshd() {
      await meshd.stop();
      await ca.stop();
    },
    async restartMeshd(ports: { grpcPort: number; securePort: number }) {
      ca = await startCa(`${dir}/ca`);
      meshd = await startMeshd(`${dir}/config`, { ca, ...ports });
    },
    async close() {
      for (const a of agents) await a.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const serial = (s: RuntimeSnapshot) => new X509Certificate(s.certificate!.certChainPem).serialNumber;

grpcTest(
  "bootstrap: token → certificate → ADS over mutual TLS with it; frozen snapshots with rising revisions",
  async () => {
    const m = await mesh();
    try {
      const agent = m.agent();
      const seen: RuntimeSnapshot[] = [];
      agent.onChange((s) => seen.push(s));
      assert.equal(agent.snapshot().revision, 0);
      await agent.start();
      const s = await within(agent.ready(), 8000, "ready");
      assert.equal(s.certificate!.spiffeId, "spiffe://cluster.local/ns/foo/sa/sleep");
      assert.equal(s.workload!.name, "sleep-1");
      assert.equal(s.workload!.serviceAccount, "sleep");
      assert.deepEqual(s.services["foo/httpbin"].ports, [
        { name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" },
      ]);
      assert.deepEqual(Object.keys(s.versions).sort(), SUBSCRIBED.map((t) => t.typeUrl).sort());
      assert.ok(Object.isFrozen(s) && Object.isFrozen(s.workload) && Object.isFrozen(s.certificate));
      assert.ok(Object.isFrozen(s.services["foo/httpbin"].endpoints));
      assert.deepEqual(structuredClone(s), s, "structured-cloneable for postMessage");
      assert.deepEqual(seen.map((x) => x.revision), seen.map((_, i) => i + 1), "every change a new revision");
      assert.equal(seen[seen.length - 1], agent.snapshot());

      // meshd saw the ADS stream come with the workload certificate, and XDS_AUTH let it through.
      assert.deepEqual(m.meshd.seen.map((x) => [x.serial, x.denied]), [[serial(s), undefined]]);
      await waitFor(() => agent.snapshot().workload?.proxied === true, 5000, "proxied");
    } finally {
      await m.close();
    }
  },
);

grpcTest(
  "rotation: the new certificate is published and the ADS stream moves to it; the config is never lost",
  async () => {
    const m = await mesh();
    try {
      const agent = m.agent({ ttlSeconds: 3 });
      const seen: RuntimeSnapshot[] = [];
      agent.onChange((s) => seen.push(s));
      await agent.start();
      const first = await within(agent.ready(), 8000, "ready");
      const firstSerial = serial(first);
      const mark = seen.length;

      await waitFor(() => serial(agent.snapshot()) !== firstSerial, 4000, "rotation");
      const rotated = agent.snapshot();
      assert.ok(rotated.certificate!.notAfter > first.certificate!.notAfter);
      // meshd sees a second stream with the new certificate; the old stream is closed after it answers.
      await waitFor(
        () => m.meshd.seen.some((x) => x.serial === serial(rotated)),
        3000,
        "stream with the new cert",
      );
      await waitFor(() => m.meshd.server.ads.connected === 1, 3000, "old stream closed");
      assert.deepEqual(m.meshd.seen.map((x) => x.serial), [firstSerial, serial(rotated)]);
      assert.equal(agent.status().ads!.connected, true);
      assert.equal(agent.status().ads!.streams, 2);
      // Every snapshot since ready kept the workload and the services.
      for (const s of seen.slice(mark - 1)) {
        assert.ok(s.workload && s.services["foo/httpbin"] && s.certificate, `revision ${s.revision}`);
      }
    } finally {
      await m.close();
    }
  },
);

grpcTest(
  "meshd stopped and restarted (CA on the same ROOT_CA_DIR, same ports): snapshot kept, mTLS stream resumes",
  async () => {
    const m = await mesh();
    try {
      const agent = m.agent();
      await agent.start();
      await within(agent.ready(), 8000, "ready");
      await waitFor(() => agent.snapshot().workload?.proxied === true, 5000, "proxied");
      const held = agent.snapshot();
      const ports = { grpcPort: m.meshd.grpcPort, securePort: m.meshd.securePort };

      await m.stopMeshd();
      await waitFor(() => agent.status().ads!.failures >= 2, 5000, "reconnect attempts");
      assert.equal(agent.snapshot(), held, "nothing changes while meshd is away");
      assert.equal(agent.status().ads!.connected, false);

      await m.restartMeshd(ports);
      await waitFor(() => agent.status().ads!.connected, 5000, "reconnected");
      assert.equal(
        m.meshd.seen[0].serial,
        serial(held),
        "the same certificate, accepted by the restarted meshd",
      );
      await waitFor(() => agent.snapshot().workload?.proxied === true, 5000, "proxied again");
      const now = agent.snapshot();
      assert.ok(now.revision >= held.revision);
      assert.equal(now.services["foo/httpbin"], held.services["foo/httpbin"], "unchanged service kept as is");
      assert.equal(now.certificate, held.certificate);
    } finally {
      await m.close();
    }
  },
);

grpcTest(
  "XDS_AUTH: a certificate of namespace foo cannot act as a workload of bar; the agent says so and retries",
  async () => {
    const m = await mesh();
    try {
      const agent = m.agent({ node: { ip: "10.2.0.9", name: "web-1", namespace: "bar" } });
      await agent.start();
      await waitFor(() => (agent.status().ads?.failures ?? 0) >= 2, 8000, "refused streams");
      assert.match(
        agent.status().ads!.lastError!,
        /^PERMISSION_DENIED: XDS_AUTH: identity of namespace foo may not act as workload bar\/web-1/,
      );
      assert.equal(agent.snapshot().certificate?.spiffeId, "spiffe://cluster.local/ns/foo/sa/sleep");
      assert.equal(agent.snapshot().workload, undefined);
    } finally {
      await m.close();
    }
  },
);

grpcTest(
  "plain text without a certificate: ready without one; options that cannot work are refused",
  async () => {
    const m = await mesh();
    try {
      const agent = m.agent({
        discoveryAddress: `127.0.0.1:${m.meshd.grpcPort}`,
        plaintext: true,
        ca: undefined,
      });
      await agent.start();
      const s = await within(agent.ready(), 5000, "ready");
      assert.equal(s.certificate, undefined);
      assert.equal(s.workload!.name, "sleep-1");
      assert.throws(
        () => new ProxyAgent({ node: NODE, discoveryAddress: "127.0.0.1:1" }),
        /needs a workload certificate: give ca.tokenFile, or plaintext: true/,
      );
      assert.throws(
        () => new ProxyAgent({ node: NODE, discoveryAddress: "127.0.0.1:1", ca: { tokenFile: "t" } }),
        /needs its root certificate/,
      );
      await assert.rejects(
        new ProxyAgent({
          node: NODE,
          discoveryAddress: "127.0.0.1:1",
          ca: { tokenFile: "t" },
          rootCertFile: "/nonexistent",
        })
          .start(),
        /root certificate \/nonexistent: /,
      );
    } finally {
      await m.close();
    }
  },
);
