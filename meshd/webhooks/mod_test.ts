/**
 * The webhooks end to end over real TLS: meshd's CA issues the serving certificate, clients trust
 * only the mesh root, and real AdmissionReview bodies (Istio's httpbin sample pod) go in.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import tls from "node:tls";
import client from "prom-client";
import type { JsonObject, JsonPatchOperation } from "./admission.ts";
import { startWebhooks } from "./mod.ts";
import { admissionReview, applyJsonPatch, httpbinPod, INVALID_POLICY, POD_KIND } from "./test_support.ts";
import { startCa, tempDir } from "../ca/test_support.ts";
import type { CertificateAuthority } from "../ca/mod.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

async function withWebhooks(
  fn: (
    port: number,
    ca: CertificateAuthority,
    registry: client.Registry,
    http: Deno.HttpClient,
  ) => Promise<void>,
  over: { injectEnabled?: boolean; injectionPath?: string } = {},
): Promise<void> {
  const { dir, cleanup } = await tempDir();
  const ca = await startCa(dir);
  const registry = new client.Registry();
  const hooks = await startWebhooks(ca, {
    address: { host: "127.0.0.1", port: 0 },
    namespace: "mesh-system",
    domain: "cluster.local",
    rootNamespace: "mesh-system",
    injectEnabled: over.injectEnabled ?? true,
    nativeSidecars: false,
    tokenAudiences: "mesh-ca,other",
    revision: undefined,
    injectionPath: over.injectionPath ?? `${dir}/no-template`,
    registry,
    caLog: quiet,
    log: quiet,
  });
  const http = Deno.createHttpClient({ caCerts: [ca.trustBundlePem] });
  try {
    await fn(hooks.port, ca, registry, http);
  } finally {
    http.close();
    await hooks.stop();
    await ca.stop();
    await cleanup();
  }
}

async function post(
  http: Deno.HttpClient,
  port: number,
  path: string,
  body: unknown,
  type = "application/json",
) {
  const res = await fetch(`https://localhost:${port}${path}`, {
    method: "POST",
    client: http,
    headers: { "content-type": type },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

function responseOf(text: string): JsonObject {
  const review = JSON.parse(text);
  assert.equal(review.apiVersion, "admission.k8s.io/v1");
  assert.equal(review.kind, "AdmissionReview");
  return review.response;
}

async function metric(registry: client.Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return (m?.values ?? []).reduce((a, v) => a + v.value, 0);
}

Deno.test("webhooks: Istio's httpbin pod posted over TLS to /inject comes back with a patch that injects it", async () => {
  await withWebhooks(async (port, _ca, registry, http) => {
    const pod = httpbinPod();
    for (const path of ["/inject", "/inject/cluster/Kubernetes/net/network1"]) {
      const { status, text } = await post(
        http,
        port,
        path,
        admissionReview(pod, POD_KIND, { uid: `u${path}` }),
      );
      assert.equal(status, 200, text);
      const response = responseOf(text);
      assert.deepEqual([response.uid, response.allowed, response.patchType], [`u${path}`, true, "JSONPatch"]);
      const ops: JsonPatchOperation[] = JSON.parse(
        Buffer.from(response.patch as string, "base64").toString("utf8"),
      );
      const patched = applyJsonPatch(pod, ops);
      const spec = patched.spec as {
        containers: JsonObject[];
        initContainers: JsonObject[];
        volumes: JsonObject[];
      };
      assert.deepEqual(spec.containers.map((c) => c.name), ["httpbin", "mesh-proxy"]);
      assert.deepEqual(spec.initContainers.map((c) => c.name), ["mesh-init"]);
      assert.equal(JSON.stringify(spec.volumes[1]).includes('"audience":"mesh-ca"'), true);
    }
    // Already injected: skipped, no patch.
    const injected = {
      ...pod,
      metadata: { ...(pod.metadata as JsonObject), annotations: { "sidecar.mesh.io/status": "{}" } },
    };
    const skip = responseOf((await post(http, port, "/inject", admissionReview(injected, POD_KIND))).text);
    assert.deepEqual([skip.allowed, skip.patch], [true, undefined]);
    // A bad inject label: refused, naming the field.
    const bad = {
      ...pod,
      metadata: { ...(pod.metadata as JsonObject), labels: { "sidecar.istio.io/inject": "maybe" } },
    };
    const refused = responseOf((await post(http, port, "/inject", admissionReview(bad, POD_KIND))).text);
    assert.equal(refused.allowed, false);
    assert.match(
      (refused.status as JsonObject).message as string,
      /metadata\.labels\.sidecar\.istio\.io\/inject/,
    );
    assert.deepEqual(
      await Promise.all(
        ["requests", "success", "skip", "failure"].map((m) =>
          metric(registry, `sidecar_injection_${m}_total`)
        ),
      ),
      [4, 2, 1, 1],
    );
  });
});

Deno.test("webhooks: /validate refuses an invalid AuthorizationPolicy and allows a Deployment (curl, trusting only the mesh root)", async () => {
  await withWebhooks(async (port, ca, registry) => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/root.pem`, ca.trustBundlePem);
      const kind = { group: "security.istio.io", version: "v1", kind: "AuthorizationPolicy" };
      const curl = async (body: unknown) => {
        await Deno.writeTextFile(`${dir}/body.json`, JSON.stringify(body));
        const out = await new Deno.Command("curl", {
          args: [
            "-sS",
            "--cacert",
            `${dir}/root.pem`,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            `@${dir}/body.json`,
            `https://localhost:${port}/validate`,
          ],
        }).output();
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        return responseOf(new TextDecoder().decode(out.stdout));
      };
      const refused = await curl(admissionReview(INVALID_POLICY, kind, { name: "deny-all" }));
      assert.equal(refused.allowed, false);
      assert.match(
        (refused.status as JsonObject).message as string,
        /^configuration is invalid: AuthorizationPolicy foo\/deny-all: spec\.action: /,
      );
      const deployment = {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "httpbin" },
        spec: {},
      };
      assert.equal(
        (await curl(admissionReview(deployment, { group: "apps", version: "v1", kind: "Deployment" })))
          .allowed,
        true,
      );
      assert.equal(await metric(registry, "cfgvalidator_validation_failed"), 1);
      assert.equal(await metric(registry, "cfgvalidator_validation_passed"), 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("webhooks: refusals before the Worker: 404, 405, 415, 413, 400", async () => {
  await withWebhooks(async (port, _ca, registry, http) => {
    const review = admissionReview(httpbinPod(), POD_KIND);
    assert.equal((await post(http, port, "/mutate", review)).status, 404);
    const get = await fetch(`https://localhost:${port}/inject`, { client: http });
    assert.equal(get.status, 405);
    await get.body?.cancel();
    assert.equal((await post(http, port, "/validate", review, "text/plain")).status, 415);
    assert.equal((await post(http, port, "/validate", "x".repeat(4 * 1024 * 1024 + 1))).status, 413);
    const notJson = await post(http, port, "/validate", "{");
    assert.deepEqual([
      notJson.status,
      notJson.text.startsWith("not an AdmissionReview v1: the body is not JSON"),
    ], [400, true]);
    const v1beta1 = await post(http, port, "/validate", {
      ...review,
      apiVersion: "admission.k8s.io/v1beta1",
    });
    assert.match(v1beta1.text, /apiVersion\/kind: expected admission\.k8s\.io\/v1 AdmissionReview/);
    assert.equal(await metric(registry, "cfgvalidator_validation_http_error"), 4);
  });
});

Deno.test("webhooks: INJECT_ENABLED=false admits pods unchanged and counts them as skipped", async () => {
  await withWebhooks(async (port, _ca, registry, http) => {
    const r = responseOf((await post(http, port, "/inject", admissionReview(httpbinPod(), POD_KIND))).text);
    assert.deepEqual([r.allowed, r.patch], [true, undefined]);
    assert.equal(await metric(registry, "sidecar_injection_skip_total"), 1);
  }, { injectEnabled: false });
});

function serial(port: number, ca: string): Promise<string> {
  return within(
    new Promise((resolve, reject) => {
      const s = tls.connect({ host: "127.0.0.1", port, ca, servername: "meshd.mesh-system.svc" }, () => {
        const c = s.getPeerCertificate();
        s.destroy();
        resolve(c.serialNumber);
      });
      s.on("error", reject);
    }),
    5000,
    "the TLS handshake",
  );
}

Deno.test("webhooks: a root rotation renews the serving certificate for new handshakes", async () => {
  await withWebhooks(async (port, ca) => {
    const before = await serial(port, ca.trustBundlePem);
    await ca.rotateRoot(24 * 3_600_000);
    let after = before;
    const deadline = Date.now() + 5000;
    while (after === before && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      after = await serial(port, ca.trustBundlePem);
    }
    assert.notEqual(after, before, "the serving certificate was not renewed after the root rotation");
  });
});

Deno.test("webhooks: an invalid injection template stops the start with the file and field", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await Deno.writeTextFile(`${dir}/config`, "policy: sometimes\n");
    await assert.rejects(
      withWebhooks(() => Promise.resolve(), { injectionPath: dir }),
      new RegExp(`^Error: ${dir}: config\\.policy: must be enabled or disabled$`),
    );
  } finally {
    await cleanup();
  }
});

Deno.test("webhooks: a body announced and sent past 4 MiB ends the connection early: meshd does not read on", async () => {
  await withWebhooks(async (port, ca) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca: ca.trustBundlePem, servername: "localhost" });
    socket.setMaxListeners(0);
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let answer = "";
    let closed = false;
    socket.on("data", (d: Uint8Array) => (answer += new TextDecoder().decode(d)));
    for (const event of ["end", "close", "error"]) socket.on(event, () => (closed = true));
    await within(new Promise((r) => socket.once("secureConnect", r)), 5000, "the TLS handshake");
    socket.write(
      `POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${
        64 * 1024 * 1024
      }\r\n\r\n`,
    );
    // At most 16 MiB of the announced 64: a server that reads on to the end keeps the connection open.
    let sent = 0;
    while (!closed && sent < 16 * 1024 * 1024) {
      if (!socket.write(chunk)) {
        await within(
          Promise.race([
            new Promise((r) => socket.once("drain", r)),
            new Promise((r) => socket.once("close", r)),
          ]),
          5000,
          "the server to read or close",
        );
      }
      sent += chunk.length;
    }
    const deadline = Date.now() + 5000;
    while (!closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    assert.ok(closed, `the connection was still open after ${sent} bytes`);
    assert.ok(sent < 16 * 1024 * 1024, `meshd read ${sent} bytes`);
    // The 413 arrives unless the reset (unread bytes) overtook it (platform.md, "TLS and mutual TLS").
    assert.ok(answer === "" || answer.startsWith("HTTP/1.1 413 "), JSON.stringify(answer.slice(0, 80)));
  });
});
