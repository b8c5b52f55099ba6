/**
 * TLS passthrough with real parts (./tls_passthrough_test_support.ts): the application's own TLS
 * through a sidecar's {@link TlsPassthrough} and through the gateway's PASSTHROUGH listener, verified
 * by real curl with the application's CA; mutual TLS to a proxied endpoint; the gateway's policies.
 */
import assert from "node:assert/strict";
import type net from "node:net";
import { curl, makeCa, makeLeaf } from "../inbound/test_support.ts";
import type { RouteConfiguration, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { passthroughTls } from "../../shared/routing/mod.ts";
import type { TlsPassthrough } from "./tls_passthrough.ts";
import {
  assertResetAtOnce,
  CLIENT_ID,
  curlTls,
  eventuallyCounted,
  PASSTHROUGH,
  withListener,
  withSidecar,
  withWorld,
} from "./tls_passthrough_test_support.ts";

/** Original destination unknown (no capture): the connection, sniffed as TLS, is routed by SNI alone. */
const bySniAlone = (pt: TlsPassthrough, raw: net.Socket, fallback: () => void) =>
  pt.bySni(raw, undefined, fallback);

Deno.test("sidecar by SNI alone: the app's own TLS inside mutual TLS to a proxied endpoint, plain to others", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    await withSidecar(() => snapshot, log, bySniAlone, async (port) => {
      for (const sni of ["secure.foo.svc.cluster.local", "secure.foo"]) {
        const r = await curlTls(sni, port);
        assert.equal(r.code, 0, `${sni}: ${r.stderr}`);
        assert.equal(r.stdout, "hello");
        assert.match(r.stderr, /subject: CN=nginx\.example\.com; O=some organization/);
        assert.match(r.stderr, /SSL certificate verify ok/);
      }
      assert.deepEqual(seen, [CLIENT_ID, CLIENT_ID], "the peer sidecar saw the proxy's SPIFFE ID");
      // Plain TCP to an unproxied endpoint; a ServiceEntry wildcard host.
      for (const sni of ["plain.foo", "api.wild.test"]) {
        const r = await curlTls(sni, port);
        assert.equal(r.code, 0, `${sni}: ${r.stderr}`);
        assert.equal(r.stdout, "hello");
      }
      assert.equal(seen.length, 2, "no mutual TLS to unproxied endpoints");
    });
  });
});

Deno.test("sidecar by SNI alone: an unknown SNI, a service with two TLS ports, or no mTLS certificate: reset", async () => {
  await withWorld(async ({ snapshot, log }) => {
    let snap = snapshot;
    await withSidecar(() => snap, log, bySniAlone, async (port) => {
      for (const sni of ["nothing.example", "wild.test", "two.foo"]) {
        const r = await curl(["--resolve", `${sni}:${port}:127.0.0.1`, "-k", `https://${sni}:${port}/`]);
        assert.equal(r.code, 35, `${sni}: ${r.stderr}`);
        assert.match(r.stderr, /reset by peer|SSL_ERROR_SYSCALL/, sni);
      }
      assert.ok(log.entries.some((e) => /no single TLS port/.test(String(e.fields?.reason))));
      snap = { ...snapshot, certificate: undefined };
      assert.equal((await curlTls("secure.foo", port)).code, 35);
      assert.ok(log.entries.some((e) => /no workload certificate yet/.test(String(e.fields?.reason))));
    });
  });
});

Deno.test("sidecar, captured to an unknown address: only hosts without addresses are routed by SNI", async () => {
  await withWorld(async ({ snapshot, log }) => {
    let destination = { address: "192.0.2.1", port: 443 };
    let taken = 0;
    const take = (pt: TlsPassthrough, raw: net.Socket, fallback: () => void) => {
      if (pt.bySni(raw, destination, fallback)) taken++;
      else fallback();
    };
    await withSidecar(() => snapshot, log, take, async (port, fallbacks, stats) => {
      const r = await curlTls("api.wild.test", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      assert.equal(fallbacks(), 0);
      // Envoy's tcp_proxy statistics of the route's cluster (the relay has ended once curl has its answer).
      const counters = await eventuallyCounted(
        stats,
        "tcp.outbound|443||*.wild.test.downstream_cx_tx_bytes_total",
      );
      assert.equal(counters["tcp.outbound|443||*.wild.test.downstream_cx_total"], 1);
      assert.ok(
        counters["tcp.outbound|443||*.wild.test.downstream_cx_rx_bytes_total"] > 100,
        "the ClientHello and more",
      );
      // A service with an address is reached by its address, not by SNI; an unknown SNI: fallback.
      for (const [i, sni] of ["secure.foo", "nothing.example"].entries()) {
        assert.equal((await curlTls(sni, port)).code, 35);
        assert.equal(fallbacks(), i + 1, sni);
      }
      assert.equal(taken, 3, "port 443 has an SNI-routed host: every connection was sniffed");
      // No host without addresses has port 8443: not even sniffed (a server-first protocol is not delayed).
      destination = { address: "192.0.2.1", port: 8443 };
      await assertResetAtOnce(curlTls("plain.foo", port));
      assert.deepEqual([taken, fallbacks()], [3, 3]);
    });
  });
});

Deno.test("sidecar, captured to a service address: a DNS ServiceEntry without endpoints is dialled by name", async () => {
  await withWorld(async ({ snapshot, log }) => {
    const targetOf = (key: string) => {
      const service = snapshot.services[key];
      return { key, service, port: service.ports[service.ports.length - 1], cluster: `outbound||${key}` };
    };
    let key = "foo/dns";
    await withSidecar(() => snapshot, log, (pt, raw, fallback) => {
      if (!pt.service(raw, targetOf(key))) fallback();
    }, async (port, fallbacks) => {
      const r = await curlTls("api.wild.test", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      // A service with endpoints is the caller's (opaque TCP to an endpoint).
      key = "foo/secure";
      await assertResetAtOnce(curlTls("secure.foo", port));
      assert.equal(fallbacks(), 1);
    });
  });
});

Deno.test("gateway PASSTHROUGH: the SNI's route to the service, the app's certificate end to end; other SNI reset", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    const gw = { ...snapshot, routes: { [PASSTHROUGH.name]: PASSTHROUGH } };
    await withListener(() => gw, log, [PASSTHROUGH.name], async (port) => {
      const r = await curlTls("nginx.example.com", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      assert.match(r.stderr, /subject: CN=nginx\.example\.com; O=some organization/);
      assert.deepEqual(seen, [CLIENT_ID]);
      const other = await curl([
        "--resolve",
        `other.example.com:${port}:127.0.0.1`,
        "-k",
        `https://other.example.com:${port}/`,
      ]);
      assert.equal(other.code, 35, other.stderr);
      const noSni = await curl(["-k", `https://127.0.0.1:${port}/`]);
      assert.equal(noSni.code, 35, "no SNI: no route");
    });
  });
});

Deno.test("gateway PASSTHROUGH: the gateway's AuthorizationPolicies apply as TCP rules", async () => {
  await withWorld(async ({ snapshot, log }) => {
    const policies: Record<string, Record<string, unknown>>[] = [];
    let i = 0;
    const gw = () => ({
      ...snapshot,
      routes: { [PASSTHROUGH.name]: PASSTHROUGH },
      authorizations: policies[i],
    });
    await withListener(gw, log, [PASSTHROUGH.name], async (port) => {
      const allow = (ipBlocks: string[]) => ({
        "foo/allow": {
          namespace: "foo",
          name: "allow",
          action: "ALLOW",
          rules: [{ from: [{ source: { ipBlocks } }] }],
        },
      });
      policies.push(
        allow(["127.0.0.0/8"]),
        allow(["10.0.0.0/8"]),
        {
          "foo/deny": {
            namespace: "foo",
            name: "deny",
            action: "DENY",
            rules: [{ to: [{ operation: { ports: [String(port)] } }] }],
          },
        },
        // An ALLOW rule with HTTP-only fields never matches a TCP connection: denied.
        {
          "foo/paths": {
            namespace: "foo",
            name: "paths",
            action: "ALLOW",
            rules: [{ to: [{ operation: { paths: ["/"] } }] }],
          },
        },
      );
      const want = [0, 35, 35, 35];
      for (; i < policies.length; i++) {
        const r = await curlTls("nginx.example.com", port);
        assert.equal(r.code, want[i], `policy ${i}: ${r.stderr}`);
      }
      assert.ok(log.entries.some((e) => /denied by foo\/deny rule 0/.test(String(e.fields?.reason))));
    });
  });
});

Deno.test("gateway: a PASSTHROUGH and a SIMPLE server share port 443, each taking its own SNI", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    const gatewayCa = await makeCa("Gateway CA");
    const leaf = await makeLeaf(gatewayCa, { dnsNames: ["secure.example.com"] });
    const simple: RouteConfiguration = {
      ...PASSTHROUGH,
      name: "https.443.secure.mygateway.foo",
      tls: {
        ...passthroughTls(["secure.example.com"]),
        mode: "SIMPLE",
        credentialName: "kubernetes://secure",
      },
      tlsRoutes: undefined,
    };
    const gw: RuntimeSnapshot = {
      ...snapshot,
      routes: { [PASSTHROUGH.name]: PASSTHROUGH, [simple.name]: simple },
      credentials: {
        "kubernetes://secure": {
          name: "kubernetes://secure",
          certificateChain: leaf.certPem,
          privateKey: leaf.keyPem,
          caCertificates: "",
          source: "mesh-system/secure",
        },
      },
    };
    const caFile = await Deno.makeTempFile({ suffix: ".pem" });
    await Deno.writeTextFile(caFile, gatewayCa.pem);
    try {
      await withListener(() => gw, log, [PASSTHROUGH.name, simple.name], async (port) => {
        const passed = await curlTls("nginx.example.com", port);
        assert.equal(passed.stdout, "hello", passed.stderr);
        const terminated = await curl([
          "--cacert",
          caFile,
          "--resolve",
          `secure.example.com:${port}:127.0.0.1`,
          `https://secure.example.com:${port}/`,
        ]);
        assert.equal(terminated.code, 0, terminated.stderr);
        assert.match(
          terminated.stdout,
          /no virtual host for secure\.example\.com/,
          "the gateway's own answer",
        );
        assert.deepEqual(seen, [CLIENT_ID], "only the passed-through connection went upstream");
      });
    } finally {
      await Deno.remove(caFile);
    }
  });
});
