import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { CertificateAuthority } from "../ca/mod.ts";
import { tempDir } from "../ca/test_support.ts";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";
import { TYPE_URLS } from "../xds/generators.ts";
import type { DiscoveryServerOptions } from "./discovery_server.ts";
import { type Msg, withDiscovery } from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const HOUR = 3_600_000;

/** A real CA (self-signed root in a temporary ROOT_CA_DIR), for its authenticator and tokens. */
async function withCa(fn: (ca: CertificateAuthority) => Promise<void>): Promise<void> {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  try {
    await ca.start({
      rootCaDir: dir,
      trustDomain: "cluster.local",
      selfSignedRsaKeySize: 2048,
      selfSignedTtlMs: 24 * HOUR,
      defaultTtlMs: HOUR,
      maxTtlMs: 2 * HOUR,
      tokenAudiences: "mesh-ca",
    });
    await fn(ca);
  } finally {
    await ca.stop();
    await cleanup();
  }
}

/** What one debug stream got. */
interface Answer {
  response?: Msg;
  error?: grpc.ServiceError;
  more: number;
  status?: grpc.status;
}

/** The first answer on one debug stream, or the gRPC error that ended it. */
function ask(
  port: number,
  request: Msg,
  options: { token?: string; delta?: boolean; ack?: boolean; halfClose?: boolean } = {},
): Promise<Answer> {
  const client = new (adsProtocol().client)(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  if (options.token) md.set("authorization", `Bearer ${options.token}`);
  // deno-lint-ignore no-explicit-any
  const c = client as any;
  const call: grpc.ClientDuplexStream<Msg, Msg> = options.delta
    ? c.DeltaAggregatedResources(md)
    : c.StreamAggregatedResources(md);
  const answered = new Promise<Answer>((resolve) => {
    let response: Msg | undefined;
    let more = 0;
    const done = (error?: grpc.ServiceError, status?: grpc.status) => {
      call.cancel();
      client.close();
      resolve({ response, error, more, status });
    };
    call.on("status", (st: grpc.StatusObject) => {
      if (st.code === grpc.status.OK) done(undefined, st.code);
    });
    call.on("data", (m: Msg) => {
      if (response) return void more++;
      response = m;
      if (options.halfClose) return;
      if (!options.ack) return done();
      // An ACK of a debug answer must not be answered again.
      call.write({ typeUrl: m.typeUrl, responseNonce: m.nonce });
      setTimeout(() => done(), 300);
    });
    call.on("error", (e: grpc.ServiceError) => done(e));
    call.write({ node: { id: "meshctl~0.0.0.0~meshctl~cluster.local" }, ...request });
    if (options.halfClose) call.end();
  });
  return within(answered, 10_000, "the debug ADS answer");
}

const body = (m: Msg, i = 0): unknown =>
  JSON.parse(new TextDecoder().decode((m.resources[i].resource ?? m.resources[i]).value));

/** withDiscovery with debug over xDS authenticated by `ca`; the plain-text port is the one tested. */
function debugOptions(ca: CertificateAuthority, authPlaintext: boolean): Partial<DiscoveryServerOptions> {
  return {
    debug: { xdsAuth: true, authPlaintext, authenticate: (cred) => ca.authenticate(cred) },
    rootCertPem: () => ca.trustBundlePem,
  };
}

Deno.test("debug over xDS: pages as over HTTP, Istio's two request forms, delta too; the client is no proxy", async () => {
  await withCa(async (ca) => {
    const admin =
      (await ca.issueBootstrapToken({ namespace: "mesh-system", serviceAccount: "meshctl" })).token;
    await withDiscovery(async ({ server, connect, port }) => {
      const p = connect("foo", "httpbin-1");
      await p.until(() => p.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1") ?? false, 3000);
      const pages = server.debugPages;
      const http = (name: string, query = "") =>
        JSON.parse(pages.render({ name, query: new URLSearchParams(query) }).body);

      // syncz moves while pushes are ACKed (the proxy's connection itself triggers one): read both ways
      // until they agree on a settled state.
      let syncz = await ask(port, { typeUrl: "istio.io/debug/syncz" }, { token: admin });
      for (
        let i = 0;
        i < 20 && syncz.response && !isDeepStrictEqual(body(syncz.response), http("syncz"));
        i++
      ) {
        await new Promise((r) => setTimeout(r, 100));
        syncz = await ask(port, { typeUrl: "istio.io/debug/syncz" }, { token: admin });
      }
      assert.equal(syncz.error, undefined);
      assert.equal(syncz.response!.typeUrl, "istio.io/debug/syncz");
      assert.equal(syncz.response!.resources[0].type_url, "istio.io/debug/syncz");
      assert.deepEqual(body(syncz.response!), http("syncz"), "the same page as /debug/syncz");

      const istioForm = await ask(port, { typeUrl: "istio.io/debug", resourceNames: ["configz"] }, {
        token: admin,
      });
      assert.deepEqual(body(istioForm.response!), http("configz"));

      const dump = await ask(port, {
        typeUrl: "istio.io/debug/config_dump",
        resourceNames: ["foo/httpbin-1"],
      }, {
        token: admin,
      });
      assert.deepEqual(body(dump.response!), http("config_dump", "proxyID=foo/httpbin-1"));

      const delta = await ask(port, { typeUrl: "istio.io/debug/mesh" }, { token: admin, delta: true });
      assert.equal(delta.response!.resources[0].name, "mesh");
      assert.deepEqual(body(delta.response!), {
        rootNamespace: "mesh-system",
        trustDomain: "cluster.local",
        pathNormalization: "DECODE_AND_MERGE_SLASHES",
      });

      const root = await ask(port, { typeUrl: "istio.io/debug/rootCert" }, { token: admin });
      assert.equal(new TextDecoder().decode(root.response!.resources[0].value), ca.trustBundlePem);

      const early = await ask(port, { typeUrl: "istio.io/debug/mesh" }, { token: admin, halfClose: true });
      assert.equal(
        early.status,
        grpc.status.OK,
        "a client that half-closes at once gets its answer, then OK",
      );
      assert.deepEqual(body(early.response!), {
        rootNamespace: "mesh-system",
        trustDomain: "cluster.local",
        pathNormalization: "DECODE_AND_MERGE_SLASHES",
      });

      const acked = await ask(port, { typeUrl: "istio.io/debug/version" }, { token: admin, ack: true });
      assert.equal(acked.more, 0, "an ACK of a debug answer is not answered");

      assert.deepEqual(
        server.ads.streams().map((s) => s.node.id),
        [p.nodeId],
        "debug streams are not proxies",
      );
      assert.equal(server.ads.connected, 1);
    }, debugOptions(ca, true));
  });
});

Deno.test("debug over xDS: refused without credentials, on plain text without XDS_AUTH_PLAINTEXT, with a wrong identity", async () => {
  await withCa(async (ca) => {
    const foo = (await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" })).token;
    const bar = (await ca.issueBootstrapToken({ namespace: "bar", serviceAccount: "sleep" })).token;
    const admin =
      (await ca.issueBootstrapToken({ namespace: "mesh-system", serviceAccount: "meshctl" })).token;
    await withDiscovery(async ({ port, connect }) => {
      const p = connect("foo", "httpbin-1");
      await p.until(() => p.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1") ?? false, 3000);
      const none = await ask(port, { typeUrl: "istio.io/debug/syncz" });
      assert.equal(none.error?.code, grpc.status.UNAUTHENTICATED);
      assert.match(none.error!.details, /^istio\.io\/debug\/syncz: authentication required: no credential/);
      const forged = await ask(port, { typeUrl: "istio.io/debug/syncz" }, {
        token: admin.slice(0, -2) + "xx",
      });
      assert.equal(forged.error?.code, grpc.status.UNAUTHENTICATED);
      const other = await ask(port, { typeUrl: "istio.io/debug/registryz" }, { token: foo });
      assert.equal(other.error?.code, grpc.status.PERMISSION_DENIED);
      assert.match(
        other.error!.details,
        /identity spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep: only the root namespace/,
      );
      const own = await ask(port, { typeUrl: "istio.io/debug/config_dump?proxyID=foo/httpbin-1" }, {
        token: foo,
      });
      assert.equal(own.error, undefined, "a namespace may dump its own proxies");
      const notOwn = await ask(port, { typeUrl: "istio.io/debug/config_dump?proxyID=foo/httpbin-1" }, {
        token: bar,
      });
      assert.equal(notOwn.error?.code, grpc.status.NOT_FOUND);
      assert.match(notOwn.error!.details, /not connected in namespace bar/);
      const barSyncz = await ask(port, { typeUrl: "istio.io/debug/syncz" }, { token: bar });
      assert.deepEqual(body(barSyncz.response!), []);
      const twoNames = await ask(port, { typeUrl: "istio.io/debug", resourceNames: ["a", "b"] }, {
        token: admin,
      });
      assert.equal(twoNames.error?.code, grpc.status.INVALID_ARGUMENT);
      // A proxy's stream is unaffected by debug streams being refused.
      assert.ok(p.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1"));
    }, debugOptions(ca, true));

    await withDiscovery(async ({ port }) => {
      const plain = await ask(port, { typeUrl: "istio.io/debug/syncz" }, { token: admin });
      assert.equal(plain.error?.code, grpc.status.UNAUTHENTICATED);
      assert.match(
        plain.error!.details,
        /plain-text port are not authenticated \(XDS_AUTH_PLAINTEXT=false\)/,
      );
    }, debugOptions(ca, false));
  });
});
