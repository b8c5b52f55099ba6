/**
 * Certificates for pods (issue 14, item 3) from a real `meshd discovery --kubeconfig` process on the
 * test API server (deploy/lab/kube_api, which implements TokenRequest and TokenReview): a pod's
 * service-account token gets its ns/sa and nothing else; wrong audience, deleted service account and
 * invalid tokens are refused, counted and logged; bootstrap tokens keep working. And one root for all
 * replicas (item 4): two meshd processes on one API serve the same root from `mesh-ca-secret`, and a
 * plugged-in `cacerts` Secret wins.
 *
 * @module
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import type * as grpc from "@grpc/grpc-js";
import {
  certificateClient,
  createCertificate,
  makeCsr,
  pluggedInCa,
} from "../../../meshd/ca/test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import {
  debugText,
  kubeMeshd,
  MESHD_NS,
  type MeshdPorts,
  saToken,
  secretData,
  withKube,
} from "./ca_kube_support.ts";
import { Buffer } from "node:buffer";
import { CertificateManager } from "../../../proxy/agent/certificate_manager.ts";
import { waitFor } from "../../../meshd/ca/test_support.ts";

const ID = (ns: string, sa: string) => `spiffe://cluster.local/ns/${ns}/sa/${sa}`;

/** The leaf's URI SANs, from a chain meshd returned, or the gRPC error's code and details. */
function outcome(r: { certChain: string[] } | grpc.ServiceError): string {
  if ("certChain" in r) return new X509Certificate(r.certChain[0]).subjectAltName ?? "(no SAN)";
  return `error ${r.code}: ${r.details}`;
}

async function metric(ports: MeshdPorts, name: string): Promise<number> {
  const r = await within(fetch(`http://127.0.0.1:${ports.monitoring}/metrics`), 5000, "metrics");
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(await r.text());
  return m ? Number(m[1]) : 0;
}

async function bootstrapToken(ports: MeshdPorts, namespace: string, serviceAccount: string): Promise<string> {
  const r = await within(
    fetch(`http://127.0.0.1:${ports.http}/debug/bootstrapToken`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ namespace, serviceAccount }),
    }),
    5000,
    "bootstrap token",
  );
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).token;
}

Deno.test("pod certificates: a service-account token gets exactly its ns/sa; every other token is refused", async () => {
  await withKube(["foo"], ["foo/sleep", "foo/other", "foo/gone"], async ({ kube, api }) => {
    const sleep = await saToken(api, "foo/sleep", ["mesh-ca"]);
    const apiAudience = await saToken(api, "foo/sleep"); // made for the API server, not the CA
    const gone = await saToken(api, "foo/gone", ["mesh-ca"]);
    await api.json("DELETE", "/api/v1/namespaces/foo/serviceaccounts/gone");
    // A token bound to a pod (as kubelet's projected tokens are) dies with the pod.
    await api.json("POST", "/api/v1/namespaces/foo/pods", {
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p1" },
        spec: { serviceAccountName: "sleep", containers: [{ name: "c", image: "i" }] },
      },
    });
    const podToken = await saToken(api, "foo/sleep", ["mesh-ca"], "p1");
    await api.json("DELETE", "/api/v1/namespaces/foo/pods/p1");
    const seen: Record<string, string> = {};
    let failures = 0;
    const r = await kubeMeshd(kube.kubeconfig, async (ports) => {
      const roots = (await secretData(api, "mesh-ca-secret"))!.data["root-cert.pem"];
      assert.equal(await debugText(ports, "/debug/rootCert"), roots);
      const client = certificateClient(ports.secure, roots);
      try {
        const ask = async (token: string, uris: string[] = []) =>
          outcome(await createCertificate(client, { csr: (await makeCsr({ uris })).csrPem }, token));
        seen.plain = await ask(sleep);
        seen.own = await ask(sleep, [ID("foo", "sleep")]);
        seen.again = await ask(sleep); // from the review cache: same answer
        seen.otherIdentity = await ask(sleep, [ID("foo", "other")]);
        seen.wrongAudience = await ask(apiAudience);
        seen.deleted = await ask(gone);
        seen.deletedPod = await ask(podToken);
        seen.invalid = await ask("not-a-token");
        seen.forged = await ask(sleep.slice(0, -4) + (sleep.endsWith("AAAA") ? "BBBB" : "AAAA"));
        seen.bootstrap = await ask(await bootstrapToken(ports, "bar", "vm"));
        failures = await metric(ports, "ca_server_authentication_failure_count");
      } finally {
        client.close();
      }
    });
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(seen, {
      plain: `URI:${ID("foo", "sleep")}`,
      own: `URI:${ID("foo", "sleep")}`,
      again: `URI:${ID("foo", "sleep")}`,
      otherIdentity: `error 7: ${ID("foo", "sleep")} may not obtain a certificate for another identity`,
      wrongAudience: "error 16: request authenticate failure",
      deleted: "error 16: request authenticate failure",
      deletedPod: "error 16: request authenticate failure",
      invalid: "error 16: request authenticate failure",
      forged: "error 16: request authenticate failure",
      bootstrap: `URI:${ID("bar", "vm")}`,
    });
    assert.equal(failures, 6, "each refusal is counted as an authentication failure");
    const log = r.out + r.err;
    for (
      const reason of [
        /CSR refused: .*spiffe:\/\/cluster\.local\/ns\/foo\/sa\/other/,
        /CSR refused: service-account token: made for \["https:\/\/kubernetes\.default\.svc\.cluster\.local"\], none of TOKEN_AUDIENCES \["mesh-ca"\]/,
        /CSR refused: service-account token: the API server refused it: pod foo\/p1 bound to the token has been deleted/,
        /CSR refused: service-account token: the API server refused it: service account foo\/gone has been deleted/,
        /CSR refused: service-account token: not a JWT/,
        /CSR refused: service-account token: the API server refused it: invalid bearer token: signature verification failed/,
      ]
    ) assert.match(log, reason);
    assert.match(log, /issued spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep \(k8s-jwt\)/);
    assert.match(log, /issued spiffe:\/\/cluster\.local\/ns\/bar\/sa\/vm \(jwt\)/);
  });
});

Deno.test("CA root: two meshd processes on one API serve the root of the Secret the first created", async () => {
  await withKube([], [], async ({ kube, api }) => {
    let first = "";
    let second = "";
    let secondRun = { code: -1, out: "", err: "" };
    const r = await kubeMeshd(kube.kubeconfig, async (a) => {
      first = await debugText(a, "/debug/rootCert");
      secondRun = await kubeMeshd(kube.kubeconfig, async (b) => {
        second = await debugText(b, "/debug/rootCert");
      });
    });
    assert.equal(r.code, 0, r.err);
    assert.equal(secondRun.code, 0, secondRun.err);
    const secret = await secretData(api, "mesh-ca-secret");
    assert.equal(secret?.type, "mesh.io/ca-root");
    assert.match(first, /^-----BEGIN CERTIFICATE-----/);
    assert.equal(second, first, "the replicas serve different roots");
    assert.equal(secret?.data["root-cert.pem"], first);
    assert.match(
      r.out + r.err,
      /self-signed root from Secret mesh-system\/mesh-ca-secret \(created from a new/,
    );
    assert.match(
      secondRun.out + secondRun.err,
      /self-signed root from Secret mesh-system\/mesh-ca-secret \(read\)/,
    );
  });
});

Deno.test("CA root: a plugged-in cacerts Secret is used, and no self-signed root is made", async () => {
  await withKube(["foo"], ["foo/sleep"], async ({ kube, api, tempDir }) => {
    const dir = await tempDir();
    const { root, intermediate } = await pluggedInCa(dir);
    const data: Record<string, string> = {};
    for (const f of ["ca-cert.pem", "ca-key.pem", "cert-chain.pem", "root-cert.pem"]) {
      data[f] = Buffer.from(await Deno.readTextFile(`${dir}/${f}`)).toString("base64");
    }
    await api.json("POST", `/api/v1/namespaces/${MESHD_NS}/secrets`, {
      body: { apiVersion: "v1", kind: "Secret", metadata: { name: "cacerts" }, type: "Opaque", data },
    });
    const token = await saToken(api, "foo/sleep", ["mesh-ca"]);
    let served = "";
    let chain: string[] = [];
    const r = await kubeMeshd(kube.kubeconfig, async (ports) => {
      served = await debugText(ports, "/debug/rootCert");
      const client = certificateClient(ports.secure, served);
      try {
        const res = await createCertificate(client, { csr: (await makeCsr()).csrPem }, token);
        assert.ok("certChain" in res, outcome(res));
        chain = res.certChain;
      } finally {
        client.close();
      }
    });
    assert.equal(r.code, 0, r.err);
    assert.equal(new X509Certificate(served).fingerprint256, new X509Certificate(root.pem).fingerprint256);
    assert.equal(
      new X509Certificate(chain[1]).fingerprint256,
      new X509Certificate(intermediate.pem).fingerprint256,
    );
    assert.equal(await secretData(api, "mesh-ca-secret"), undefined);
    assert.match(r.out + r.err, /plugged-in CA from Secret mesh-system\/cacerts/);
  });
});

Deno.test("pod certificates: the proxy agent sends the projected token file, read again for every CSR", async () => {
  await withKube(["foo"], ["foo/sleep"], async ({ kube, api, tempDir }) => {
    const dir = await tempDir();
    // As kubelet writes it: the token file the injector mounts (mesh-token), first with a token for the API
    // server (refused), then rotated to one for the CA.
    const tokenFile = `${dir}/mesh-token`;
    await Deno.writeTextFile(tokenFile, await saToken(api, "foo/sleep"));
    const good = await saToken(api, "foo/sleep", ["mesh-ca"]);
    let issued = "";
    let refusedFirst = "";
    const r = await kubeMeshd(kube.kubeconfig, async (ports) => {
      const m = new CertificateManager({
        address: `127.0.0.1:${ports.secure}`,
        rootsPem: await debugText(ports, "/debug/rootCert"),
        serverName: "meshd.mesh-system.svc",
        tokenFile,
        backoff: { initialMs: 100, maxMs: 200 },
      });
      try {
        m.start();
        await waitFor(() => m.status().failures >= 2, 10_000, "refusals of the API-audience token");
        refusedFirst = m.status().lastError ?? "";
        await Deno.writeTextFile(`${tokenFile}.new`, good);
        await Deno.rename(`${tokenFile}.new`, tokenFile);
        const cert = await within(m.firstCertificate(), 10_000, "a certificate after the token rotated");
        issued = new X509Certificate(cert.certChainPem).subjectAltName ?? "";
      } finally {
        m.stop();
      }
    });
    assert.equal(r.code, 0, r.err);
    assert.match(refusedFirst, /code 16\): request authenticate failure/);
    assert.equal(issued, `URI:${ID("foo", "sleep")}`);
  });
});

Deno.test("CA root: an API server that cannot be reached at start stops meshd with the reason", async () => {
  await withKube([], [], async ({ kube, tempDir }) => {
    const kubeconfig = `${await tempDir()}/kubeconfig`;
    await Deno.copyFile(kube.kubeconfig, kubeconfig);
    await kube.server.stop();
    const r = await kubeMeshd(kubeconfig, () => Promise.reject(new Error("meshd became ready")));
    assert.notEqual(r.code, 0);
    assert.match(r.err, /the CA root from the Kubernetes API \(namespace mesh-system\): /);
  });
});
