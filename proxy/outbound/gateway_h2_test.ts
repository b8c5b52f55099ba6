/**
 * ALPN `h2` on a gateway's HTTPS servers (as Envoy's, which Istio gives `h2` and `http/1.1`), in
 * front of Debian's httpbin (an `HTTP` port, so every stream goes upstream as HTTP/1.1): curl
 * `--http2` gets HTTP/2 through a SIMPLE server (GET, a 1 MiB POST echoed, a client's
 * X-Forwarded-Client-Cert removed) and through a MUTUAL one, whose client certificate becomes the
 * X-Forwarded-Client-Cert element as on HTTP/1.1; curl `--http1.1` still gets HTTP/1.1. python3-grpcio
 * over TLS through a third server to a `GRPC` service (h2c to the application): every call kind.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { makeTestCa } from "../../shared/credentials/_test_support.ts";
import type { RouteConfiguration } from "../../shared/routing/mod.ts";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { Httpbin, RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import { appService } from "../http/limits_test_support.ts";
import type { RuntimeSnapshot, TlsCredentialInfo } from "../runtime/snapshot.ts";
import { grpcClient, grpcioMissing, run, startGrpcServer } from "../h2proxy/h2_apps_test_support.ts";
import { OutboundListener } from "./listener.ts";
import type { OutboundStats } from "./outbound_stats.ts";

const SIMPLE_HOST = "httpbin.example.com";
const MUTUAL_HOST = "mtls.example.com";
const GRPC_HOST = "grpc.example.com";

function server(host: string, mode: "SIMPLE" | "MUTUAL", service = "app"): RouteConfiguration {
  return {
    name: `https.443.${host.split(".")[0]}.gw.foo`,
    port: 443,
    bindPort: 443,
    gateways: ["foo/gw"],
    virtualHosts: [{
      name: `${host}:443`,
      domains: [host],
      routes: [{
        name: `foo/${mode}.0`,
        matches: [],
        destinations: [{ host: `${service}.foo.svc.cluster.local`, port: 80, weight: 100 }],
      }],
    }],
    tls: {
      mode,
      sniHosts: [host],
      credentialName: `kubernetes://${host}`,
      caCredentialName: mode === "MUTUAL" ? `kubernetes://${host}-cacert` : "",
      minProtocolVersion: "",
      maxProtocolVersion: "",
      subjectAltNames: [],
    },
  };
}

function credential(
  name: string,
  cert: { certPem: string; keyPem: string } | null,
  caPem = "",
): TlsCredentialInfo {
  return {
    name: `kubernetes://${name}`,
    certificateChain: cert?.certPem ?? "",
    privateKey: cert?.keyPem ?? "",
    caCertificates: caPem,
    source: `mesh-system/${name}`,
  };
}

Deno.test(requires(httpbinMissing() ?? grpcioMissing() ?? commandMissing("curl"), {
  name:
    "gateway HTTPS: ALPN h2 to httpbin through SIMPLE and MUTUAL servers (XFCC from the client certificate)",
  async fn(t) {
    const { ca, leaf } = await makeTestCa();
    const simpleCert = await leaf(SIMPLE_HOST), mutualCert = await leaf(MUTUAL_HOST);
    const clientCert = await leaf("client.example.com", { v3: true, uri: "spiffe://example.com/client" });
    const grpcCert = await leaf(GRPC_HOST, { v3: true });
    const httpbin = await Httpbin.start();
    const grpcApp = await startGrpcServer();
    const routes = [
      server(SIMPLE_HOST, "SIMPLE"),
      server(MUTUAL_HOST, "MUTUAL"),
      server(GRPC_HOST, "SIMPLE", "grpc"),
    ];
    const base = snapshotOf("PERMISSIVE", undefined);
    const creds = [
      credential(SIMPLE_HOST, simpleCert),
      credential(MUTUAL_HOST, mutualCert),
      credential(`${MUTUAL_HOST}-cacert`, null, ca.certPem),
      credential(GRPC_HOST, grpcCert),
    ];
    const grpcService = appService(grpcApp.port)["foo/app"];
    const snapshot: RuntimeSnapshot = {
      ...base,
      workload: base.workload && { ...base.workload, namespace: "foo" },
      services: {
        ...appService(httpbin.port),
        "foo/grpc": {
          ...grpcService,
          name: "grpc",
          hosts: ["grpc.foo.svc.cluster.local"],
          ports: grpcService.ports.map((p) => ({ ...p, name: "grpc", protocol: "GRPC" })),
        },
      },
      routes: Object.fromEntries(routes.map((r) => [r.name, r])),
      credentials: Object.fromEntries(creds.map((c) => [c.name, c])),
    };
    const gw = new OutboundListener({
      address: "127.0.0.1",
      port: 0,
      snapshot: () => snapshot,
      log: new RecordingLog(),
      routeNames: routes.map((r) => r.name),
    });
    await gw.start();
    const dir = await Deno.makeTempDir({ prefix: "h2gw-gateway-" });
    const file = async (name: string, text: string) => {
      const path = join(dir, name);
      await Deno.writeTextFile(path, text);
      return path;
    };
    const caFile = await file("ca.pem", ca.certPem);
    const clientArgs = [
      "--cert",
      await file("client.pem", clientCert.certPem),
      "--key",
      await file("client.key", clientCert.keyPem),
    ];
    const curl = async (host: string, path: string, args: string[] = []) => {
      const r = await run("curl", [
        "-sS",
        "--max-time",
        "15",
        "--cacert",
        caFile,
        "--resolve",
        `${host}:${gw.port}:127.0.0.1`,
        "-w",
        "\n%{http_version} %{http_code}",
        ...args,
        `https://${host}:${gw.port}${path}`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const nl = r.stdout.lastIndexOf("\n");
      const [version, status] = r.stdout.slice(nl + 1).split(" ");
      return { version, status: Number(status), body: r.stdout.slice(0, nl) };
    };
    try {
      await t.step(
        "SIMPLE, curl --http2: HTTP/2, httpbin answers (HTTP/1.1), a client's XFCC removed",
        async () => {
          const r = await curl(SIMPLE_HOST, "/get", ["--http2", "-H", "x-forwarded-client-cert: By=forged"]);
          assert.equal(r.version, "2");
          assert.equal(r.status, 200);
          const seen = JSON.parse(r.body);
          assert.equal(seen.headers.Host, `${SIMPLE_HOST}:${gw.port}`);
          assert.equal(seen.headers["X-Forwarded-Client-Cert"], undefined);
          assert.equal((gw.observer as OutboundStats).counters.downstream_cx_http2_total, 1);
        },
      );

      await t.step("SIMPLE, curl --http2 POST 1 MiB: echoed byte for byte", async () => {
        const body = "y".repeat(1024 * 1024);
        const upload = await file("upload.txt", body);
        const r = await curl(SIMPLE_HOST, "/anything", [
          "--http2",
          "--data-binary",
          `@${upload}`,
          "-H",
          "content-type: text/plain",
        ]);
        assert.equal(r.version, "2");
        assert.equal(JSON.parse(r.body).data, body);
      });

      await t.step(
        "MUTUAL, curl --http2 with a client certificate: XFCC from it, as on HTTP/1.1",
        async () => {
          const h2 = await curl(MUTUAL_HOST, "/get", ["--http2", ...clientArgs]);
          assert.equal(h2.version, "2");
          assert.equal(h2.status, 200);
          const h1 = await curl(MUTUAL_HOST, "/get", ["--http1.1", ...clientArgs]);
          assert.equal(h1.version, "1.1");
          const xfcc = JSON.parse(h2.body).headers["X-Forwarded-Client-Cert"];
          assert.match(
            xfcc,
            /^Hash=[0-9a-f]{64};Subject="[^"]*client\.example\.com[^"]*";URI=spiffe:\/\/example\.com\/client/,
          );
          assert.equal(xfcc, JSON.parse(h1.body).headers["X-Forwarded-Client-Cert"]);
        },
      );

      await t.step("python3-grpcio over TLS to a GRPC service: every call kind", async () => {
        const r = await grpcClient(
          `127.0.0.1:${gw.port}`,
          `${GRPC_HOST}:${gw.port}`,
          ["unary", "server_stream", "client_stream", "bidi", "large", "trailers"],
          undefined,
          caFile,
        );
        for (const [name, outcome] of Object.entries(r)) {
          assert.equal(outcome.code, "OK", `${name}: ${outcome.details}`);
        }
      });

      await t.step("curl --http1.1 still gets HTTP/1.1", async () => {
        const r = await curl(SIMPLE_HOST, "/get", ["--http1.1"]);
        assert.equal(r.version, "1.1");
        assert.equal(r.status, 200);
      });
    } finally {
      await gw.close();
      await httpbin.stop();
      await grpcApp.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
