/**
 * True client addresses and denial explanations at the ingress gateway, end to end: meshd in process,
 * real httpbin (gunicorn) behind its sidecar, a real gateway proxy (`--type router`), and requests
 * written as raw bytes from chosen source addresses.
 *
 * - X-Forwarded-For (Envoy's use_remote_address on gateways, Istio's gatewayTopology): the gateway
 *   appends the downstream address, and `remoteIpBlocks` sees the entry `numTrustedProxies` from the
 *   right (mesh-wide 0, then 1 and 2 through the gateway workload's `proxy.istio.io/config`
 *   annotation); spoofing with many entries, empty entries, garbage, IPv6 and several fields;
 *   X-Forwarded-Proto is the connection's scheme unless a trusted hop sent it.
 * - `x-mesh-authz-reason` only for a source the mesh config's `denialExplanation` lists.
 *
 * Clients on 127.0.0.0/8 are loopback, for which Envoy appends the listener's own address; when the
 * host has a non-loopback IPv4 address, a client bound to it shows its own address appended.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type RawResponse } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { sendRaw } from "../../proxy/inbound/target_echo.ts";
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import { eventually, gatewayMeshServices, startGatewayMesh } from "./e2e_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const HTTPBIN_IP = "127.0.0.22";
const GATEWAY_IP = "127.0.0.24";
const PORT = freePort();
/** A loopback client that `denialExplanation` lists; 127.0.0.1 is not listed. */
const LISTED_CLIENT = "127.0.0.25";
const TRUSTED = "203.0.113.7";

/** The services, the gateway's WorkloadEntry carrying `annotation` as its proxy.istio.io/config. */
function services(annotation?: string): string {
  const yaml = gatewayMeshServices({ httpbin: HTTPBIN_IP, gateway: GATEWAY_IP }, [
    { name: "http", number: 80, protocol: "HTTP", targetPort: PORT },
  ]);
  if (annotation === undefined) return yaml;
  const at = "metadata: {name: ingressgateway-1, namespace: mesh-system}";
  assert.ok(yaml.includes(at));
  return yaml.replace(
    at,
    `metadata: {name: ingressgateway-1, namespace: mesh-system, annotations: {proxy.istio.io/config: ${
      JSON.stringify(annotation)
    }}}`,
  );
}

const GATEWAY = `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: foo}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: ["*"]
  gateways: [gw]
  http: [{route: [{destination: {port: {number: 8000}, host: httpbin.foo.svc.cluster.local}}]}]
`;

// At the gateway: 6.6.6.0/24 is denied everywhere; /anything only for TRUSTED and 2001:db8::/32.
const POLICIES = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-evil, namespace: mesh-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: DENY
  rules: [{from: [{source: {remoteIpBlocks: [6.6.6.0/24]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow, namespace: mesh-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: ALLOW
  rules:
  - to: [{operation: {notPaths: ["/anything*"]}}]
  - from: [{source: {remoteIpBlocks: [${TRUSTED}, "2001:db8::/32"]}}]
    to: [{operation: {paths: ["/anything*"]}}]
`;

/** Sends one request as raw bytes from `from`; `fields` are header lines as written. */
async function send(path: string, fields: string[], from = "127.0.0.1"): Promise<RawResponse> {
  return await sendRaw(
    PORT,
    `GET ${path} HTTP/1.1\r\nHost: example.com\r\n${fields.map((f) => `${f}\r\n`).join("")}` +
      "Connection: close\r\n\r\n",
    { host: GATEWAY_IP, localAddress: from },
  );
}

const xff = (...values: string[]) => values.map((v) => `X-Forwarded-For: ${v}`);

/** The X-Forwarded-For httpbin received (it shows it with show_env=1). */
async function seenByApp(fields: string[], from?: string): Promise<string | undefined> {
  const r = await send("/headers?show_env=1", fields, from);
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body).headers["X-Forwarded-For"];
}

/** Status of /status/200 (only the DENY applies) and of /anything (the ALLOW needs a trusted address). */
async function statuses(fields: string[]): Promise<[number, number]> {
  return [(await send("/status/200", fields)).status, (await send("/anything", fields)).status];
}

function nonLoopbackIpv4(): string | undefined {
  return Deno.networkInterfaces().find((i) => i.family === "IPv4" && !i.address.startsWith("127."))?.address;
}

Deno.test(requires(httpbinMissing(), {
  name: "e2e: the gateway appends the client to X-Forwarded-For; remoteIpBlocks trust numTrustedProxies hops",
  async fn(t) {
    const mesh = await startGatewayMesh(
      { "services.yaml": services(), "gateway.yaml": GATEWAY, "policies.yaml": POLICIES },
      { httpbin: HTTPBIN_IP, gateway: GATEWAY_IP },
      {
        proxySettings: {
          ...DEFAULT_PROXY_SETTINGS,
          denialExplanation: { principals: [], ipBlocks: [`${LISTED_CLIENT}/32`] },
        },
      },
    );
    const hopsInForce = (want: number) => async () => {
      const dump = await (await fetch(`http://127.0.0.1:${mesh.gateway.adminPort}/config_dump`)).json();
      const listeners = JSON.stringify(dump);
      return listeners.includes(`"use_remote_address":true,"xff_num_trusted_hops":${want}`)
        ? undefined
        : `config_dump has no gateway listener with xff_num_trusted_hops ${want}`;
    };
    try {
      await eventually("routed", async () => {
        const r = await send("/status/200", []).catch((e) => ({ status: 0, body: String(e) }));
        return r.status === 200 ? undefined : `${r.status} ${r.body}`;
      }, 15_000);
      await eventually("config_dump shows the gateway's settings", hopsInForce(0));

      await t.step("no trusted hop: a client's X-Forwarded-For is kept, the real hop appended", async () => {
        // A loopback peer: Envoy appends the listener's own address.
        assert.equal(await seenByApp([]), GATEWAY_IP);
        assert.equal(await seenByApp(xff("6.6.6.6")), `6.6.6.6,${GATEWAY_IP}`);
        const proto = await send("/headers?show_env=1", ["X-Forwarded-Proto: https"]);
        assert.equal(
          JSON.parse(proto.body).headers["X-Forwarded-Proto"],
          "http",
          "a client's scheme is replaced",
        );
        const own = nonLoopbackIpv4();
        if (own !== undefined) assert.equal(await seenByApp(xff("6.6.6.6"), own), `6.6.6.6,${own}`);
      });

      await t.step("no trusted hop: remoteIpBlocks see the peer, whatever X-Forwarded-For says", async () => {
        assert.deepEqual(await statuses([]), [200, 403]);
        assert.deepEqual(await statuses(xff("6.6.6.6")), [200, 403], "a forged denied address is not used");
        assert.deepEqual(await statuses(xff(TRUSTED)), [200, 403], "a forged allowed address is not used");
      });

      await t.step("denial explanation: only for the listed source, never by X-Forwarded-For", async () => {
        const ask = "x-mesh-authz-debug: 1";
        const unlisted = await send("/anything", [ask]);
        assert.equal(unlisted.status, 403);
        assert.equal(unlisted.body, "RBAC: access denied");
        assert.equal(unlisted.headers["x-mesh-authz-reason"], undefined);
        const forged = await send("/anything", [ask, `X-Forwarded-For: ${LISTED_CLIENT}`]);
        assert.equal(forged.headers["x-mesh-authz-reason"], undefined);
        const listed = await send("/anything", [ask], LISTED_CLIENT);
        assert.equal(listed.status, 403);
        assert.equal(
          listed.headers["x-mesh-authz-reason"],
          "denied: no rule of ALLOW policies mesh-system/allow matched",
        );
        assert.equal((await send("/anything", [], LISTED_CLIENT)).headers["x-mesh-authz-reason"], undefined);
      });

      await t.step(
        "proxy.istio.io/config numTrustedProxies 1 on the gateway: the last entry is the client",
        async () => {
          await Deno.writeTextFile(
            join(mesh.config, "services.yaml"),
            services("gatewayTopology: {numTrustedProxies: 1}"),
          );
          await eventually("the annotation reaches the gateway", hopsInForce(1), 8000);
          assert.deepEqual(await statuses(xff(TRUSTED)), [200, 200]);
          assert.deepEqual(
            await statuses(xff("6.6.6.6")),
            [403, 403],
            "DENY honoured for the computed address",
          );
          assert.deepEqual(
            await statuses(xff(`6.6.6.6, ${TRUSTED}`)),
            [200, 200],
            "entries left of it do not count",
          );
          assert.deepEqual(await statuses(xff(`${TRUSTED}, 6.6.6.6`)), [403, 403]);
          assert.equal(await seenByApp(xff(`6.6.6.6, ${TRUSTED}`)), `6.6.6.6, ${TRUSTED},${GATEWAY_IP}`);
          const proto = await send("/headers?show_env=1", ["X-Forwarded-Proto: https"]);
          assert.equal(
            JSON.parse(proto.body).headers["X-Forwarded-Proto"],
            "https",
            "kept from a trusted hop",
          );
        },
      );

      await t.step("spoofing attempts with one trusted hop", async () => {
        const many = Array.from({ length: 500 }, () => "6.6.6.6").join(",");
        assert.deepEqual(await statuses(xff(`${many},${TRUSTED}`)), [200, 200], "many entries: the last");
        assert.deepEqual(await statuses(xff(`${TRUSTED},${many}`)), [403, 403]);
        // Several fields are joined with `,` (Envoy): the last field's last entry decides.
        assert.deepEqual(await statuses(xff(TRUSTED, "6.6.6.6")), [403, 403]);
        assert.deepEqual(await statuses(xff("6.6.6.6", TRUSTED)), [200, 200]);
        assert.equal(await seenByApp(xff("6.6.6.6", "", TRUSTED)), `6.6.6.6,${TRUSTED},${GATEWAY_IP}`);
        // Not an address at the trusted place: the peer, which the ALLOW does not list.
        for (const bad of [`${TRUSTED},`, `${TRUSTED}, garbage`, `${TRUSTED}:80`, "", " ", `[2001:db8::1]`]) {
          assert.deepEqual(await statuses(xff(bad)), [200, 403], JSON.stringify(bad));
        }
        assert.deepEqual(await statuses(xff("2001:db8::1")), [200, 200], "IPv6");
        assert.deepEqual(await statuses(xff("2001:db9::1")), [200, 403]);
      });

      await t.step("numTrustedProxies 2: the second entry from the right", async () => {
        await Deno.writeTextFile(
          join(mesh.config, "services.yaml"),
          services("gatewayTopology: {numTrustedProxies: 2}"),
        );
        await eventually("two hops", hopsInForce(2), 8000);
        assert.deepEqual(await statuses(xff(`${TRUSTED}, 10.0.0.1`)), [200, 200]);
        assert.deepEqual(await statuses(xff(`6.6.6.6, ${TRUSTED}`)), [403, 403]);
        assert.deepEqual(await statuses(xff(TRUSTED)), [200, 403], "fewer entries than hops: the peer");
      });
    } catch (e) {
      mesh.dumpLogs();
      throw e;
    } finally {
      await mesh.stop();
    }
  },
}));
