/**
 * meshd/ca/kube_ca.ts against the test API server (deploy/lab/kube_api): the race of two replicas
 * creating the Secret (409), USE_CACERTS_FOR_SELF_SIGNED_CA, a self-signed root already in
 * ROOT_CA_DIR, invalid Secrets named with their data key, the Secret updated after a rotation and
 * followed by a running replica (plugged-in files winning without an API call: meshd/ca/kube_ca_test.ts).
 *
 * @module
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import { COPY_PREFIX, prepareKubeCa, type SecretApi } from "../../../meshd/ca/kube_ca.ts";
import { createSelfSignedRootCa, loadRootCa } from "../../../meshd/ca/root_ca.ts";
import { pluggedInCa, startCa } from "../../../meshd/ca/test_support.ts";
import { RootCaError } from "../../../shared/internal/ca/root_ca_error.ts";
import { MESHD_NS, secretData, withKube } from "./ca_kube_support.ts";

const HOUR = 3_600_000;
const ROOT = { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: 24 * HOUR };

async function rootOf(dir: string): Promise<string> {
  return (await loadRootCa(dir)).bundle.rootFingerprint;
}

const options = (api: SecretApi, rootCaDir: string, warn: (m: string) => void = () => {}) => ({
  api,
  namespace: MESHD_NS,
  rootCaDir,
  useCacertsSecret: false,
  root: ROOT,
  warn,
});

Deno.test("kube CA: a replica that lost the race to create the Secret (409) uses the winner's root", async () => {
  await withKube([], [], async ({ api, tempDir: dirs }) => {
    const winner = await prepareKubeCa(options(api, await dirs()));
    // The loser's GET ran before the winner's POST: it sees no Secret, makes its own root, and gets 409.
    let hidden = false;
    const racing: SecretApi = {
      json<T>(method: string, path: string, req?: { body?: unknown }): Promise<T> {
        if (method === "GET" && path.endsWith("/mesh-ca-secret") && !hidden) {
          hidden = true;
          return Promise.reject(Object.assign(new Error("404"), { statusCode: 404 }));
        }
        return api.json<T>(method, path, req);
      },
    };
    const loser = await prepareKubeCa(options(racing, await dirs()));
    assert.ok(hidden);
    assert.equal(await rootOf(loser.caDir), await rootOf(winner.caDir));
    assert.match(loser.description, /created by another replica first, read/);
    await winner.cleanup();
    await loser.cleanup();
  });
});

Deno.test("kube CA: USE_CACERTS_FOR_SELF_SIGNED_CA stores the root in cacerts, read back as self-signed", async () => {
  await withKube([], [], async ({ api, tempDir: dirs }) => {
    const first = await prepareKubeCa({ ...options(api, await dirs()), useCacertsSecret: true });
    const secret = await secretData(api, "cacerts");
    assert.equal(secret?.type, "mesh.io/ca-root");
    assert.equal(await secretData(api, "mesh-ca-secret"), undefined);
    // Istio's istio-ca-secret layout: ca-cert.pem = root-cert.pem's first certificate, empty cert-chain.pem.
    assert.equal(secret?.data["ca-cert.pem"], secret?.data["root-cert.pem"]);
    assert.equal(secret?.data["cert-chain.pem"], "");
    const second = await prepareKubeCa({ ...options(api, await dirs()), useCacertsSecret: true });
    assert.match(second.description, /self-signed root from Secret mesh-system\/cacerts \(read\)/);
    assert.equal((await loadRootCa(second.caDir)).bundle.source, "self-signed");
    assert.equal(await rootOf(second.caDir), await rootOf(first.caDir));
    await first.cleanup();
    await second.cleanup();
  });
});

Deno.test("kube CA: a self-signed root already in ROOT_CA_DIR goes into the new Secret", async () => {
  await withKube([], [], async ({ api, tempDir: dirs }) => {
    const local = await dirs();
    await createSelfSignedRootCa(local, ROOT);
    const ca = await prepareKubeCa(options(api, local));
    assert.equal(await rootOf(ca.caDir), await rootOf(local));
    assert.match(ca.description, /created from the self-signed root in /);
    assert.ok(ca.caDir.startsWith(join(local, COPY_PREFIX)));
    await ca.cleanup();
    assert.deepEqual([...Deno.readDirSync(local)].map((e) => e.name).filter((n) => n.startsWith(".")), []);
  });
});

Deno.test("kube CA: invalid Secrets are refused naming the Secret and the data key", async () => {
  await withKube([], [], async ({ api, tempDir: dirs }) => {
    const post = (name: string, type: string, data: Record<string, string>) =>
      api.json("POST", `/api/v1/namespaces/${MESHD_NS}/secrets`, {
        body: {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name },
          type,
          data: Object.fromEntries(
            Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
          ),
        },
      });
    const refused = async (reason: RegExp) => {
      const dir = await dirs();
      await assert.rejects(prepareKubeCa(options(api, dir)), (e: unknown) => {
        assert.ok(e instanceof RootCaError, String(e));
        assert.match(e.message, reason);
        return true;
      });
      assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(".")), []);
    };
    const plugged = await dirs();
    await pluggedInCa(plugged);
    const file = (f: string) => Deno.readTextFileSync(join(plugged, f));
    await post("cacerts", "Opaque", { "ca-cert.pem": file("ca-cert.pem"), "ca-key.pem": file("ca-key.pem") });
    await refused(/Secret mesh-system\/cacerts: data key cert-chain\.pem is missing or empty/);
    await api.json("DELETE", `/api/v1/namespaces/${MESHD_NS}/secrets/cacerts`);
    const other = await dirs();
    await pluggedInCa(other);
    await post("cacerts", "Opaque", {
      "ca-cert.pem": file("ca-cert.pem"),
      "ca-key.pem": Deno.readTextFileSync(join(other, "ca-key.pem")),
      "cert-chain.pem": file("cert-chain.pem"),
      "root-cert.pem": file("root-cert.pem"),
    });
    await refused(/Secret mesh-system\/cacerts: data key ca-key\.pem: does not match the certificate/);
    await api.json("DELETE", `/api/v1/namespaces/${MESHD_NS}/secrets/cacerts`);
    await post("mesh-ca-secret", "mesh.io/ca-root", {
      "ca-key.pem": file("ca-key.pem"),
      "root-cert.pem": "x",
    });
    await refused(/Secret mesh-system\/mesh-ca-secret: data key root-cert\.pem: contains no PEM CERTIFICATE/);
  });
});

Deno.test("kube CA: a rotated self-signed root is written back to the Secret", async () => {
  await withKube([], [], async ({ api, tempDir: dirs }) => {
    const rootCaDir = await dirs();
    const warnings: string[] = [];
    const kubeCa = await prepareKubeCa(options(api, rootCaDir, (m) => warnings.push(m)));
    const ca = await startCa(rootCaDir, { caDir: kubeCa.caDir, onRootsWritten: kubeCa.onRootsWritten });
    try {
      const before = (await secretData(api, "mesh-ca-secret"))!.data;
      const bundle = await ca.rotateRoot(48 * HOUR);
      const after = (await secretData(api, "mesh-ca-secret"))!.data;
      assert.equal(after["root-cert.pem"], bundle.rootCertPem);
      assert.equal(after["ca-key.pem"], before["ca-key.pem"]);
      const roots = after["root-cert.pem"].split(/(?<=-----END CERTIFICATE-----\n)/).filter((s) => s !== "");
      assert.equal(roots.length, 2, "the earlier root stays in the bundle");
      assert.equal(after["ca-cert.pem"], roots[0]);
      assert.equal(
        new X509Certificate(roots[1]).fingerprint256,
        new X509Certificate(before["ca-cert.pem"]).fingerprint256,
      );
      assert.deepEqual(warnings, []);
      // A replica starting now reads the rotated root.
      const next = await prepareKubeCa(options(api, await dirs()));
      assert.equal(await rootOf(next.caDir), bundle.rootFingerprint);
      await next.cleanup();
    } finally {
      await ca.stop();
      await kubeCa.cleanup();
    }
  });
});

Deno.test("kube CA: without meshd's namespace the root stays in ROOT_CA_DIR, with a warning", async () => {
  await withKube([], [], async ({ api, tempDir }) => {
    const rootCaDir = await tempDir();
    const ca = await prepareKubeCa({ ...options(api, rootCaDir), namespace: "absent" });
    assert.equal(ca.caDir, rootCaDir);
    assert.match(
      ca.warning ?? "",
      /^namespace absent does not exist: the CA root is not shared through a Secret; it is kept in ROOT_CA_DIR /,
    );
    assert.deepEqual([...Deno.readDirSync(rootCaDir)], [], "nothing left behind");
  });
});

Deno.test("kube CA: a running replica takes the roots another rotated; roots of another key are refused", async () => {
  await withKube([], [], async ({ api, tempDir }) => {
    const start = async () => {
      const rootCaDir = await tempDir();
      const k = await prepareKubeCa(options(api, rootCaDir));
      const ca = await startCa(rootCaDir, {
        caDir: k.caDir,
        onRootsWritten: k.onRootsWritten,
        pullRoots: k.pullRoots,
      });
      return { k, ca };
    };
    const a = await start();
    const b = await start();
    const settings = { gracePeriodPercentile: 20, rootTtlMs: 24 * HOUR };
    try {
      assert.equal(await b.ca.checkRoot(settings), "unchanged");
      const rotated = await a.ca.rotateRoot(48 * HOUR);
      assert.equal(await b.ca.checkRoot(settings), "followed");
      assert.equal(b.ca.bundle.rootFingerprint, rotated.rootFingerprint);
      assert.equal(b.ca.bundle.rootCertPem, rotated.rootCertPem);
      assert.equal(await b.ca.checkRoot(settings), "unchanged");

      // An operator (or attacker) puts a root of another key into the Secret: the Worker's key does not
      // match it, so the replica keeps what it has.
      const stranger = await tempDir();
      await createSelfSignedRootCa(stranger, ROOT);
      const path = `/api/v1/namespaces/${MESHD_NS}/secrets/mesh-ca-secret`;
      const secret = await api.json<{ data: Record<string, string> }>("GET", path);
      secret.data["root-cert.pem"] = Buffer.from(
        await Deno.readTextFile(join(stranger, "self-signed-ca-cert.pem")),
      ).toString("base64");
      await api.json("PUT", path, { body: secret });
      await assert.rejects(b.ca.checkRoot(settings), /does not match the certificate/);
      assert.equal(b.ca.bundle.rootFingerprint, rotated.rootFingerprint);
      assert.equal(
        await Deno.readTextFile(join(b.k.caDir, "self-signed-ca-cert.pem")),
        rotated.rootCertPem,
        "the copy was restored",
      );
    } finally {
      for (const r of [a, b]) {
        await r.ca.stop();
        await r.k.cleanup();
      }
    }
  });
});
