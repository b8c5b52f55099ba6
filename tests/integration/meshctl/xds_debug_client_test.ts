/**
 * meshctl over xDS (`--xds-address`) against the real meshd program and a real proxy: each live
 * command with a mesh certificate in `--cert-dir`, with a bearer token, and with `--plaintext`,
 * compared with the same command over meshd's debug HTTP interface; and the refusals.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { certificateClient, createCertificate, makeCsr } from "../../../meshd/ca/test_support.ts";
import { CERT_DIR_FILES } from "../../../meshctl/debug_flags.ts";
import {
  bootstrapToken as token,
  freePort,
  liveMeshConfig,
  type LiveMeshd,
  type LiveProxy,
  meshctl,
  startLiveMeshd,
  startLiveProxy,
} from "../../../meshctl/test_support.ts";
import { XdsDebugClient } from "../../../meshctl/xds_debug_client.ts";

const HTTP_PORT = freePort();
const CONFIG = liveMeshConfig({ http: HTTP_PORT, tcp: freePort(), unbound: freePort() });

/** A `--cert-dir` with a certificate meshd's CA issued for `namespace`/`serviceAccount`. */
async function certDir(meshd: LiveMeshd, namespace: string, serviceAccount: string): Promise<string> {
  const root = await (await fetch(`http://${meshd.debugAddress}/debug/rootCert`)).text();
  const csr = await makeCsr({ uris: [`spiffe://cluster.local/ns/${namespace}/sa/${serviceAccount}`] });
  const client = certificateClient(meshd.ports.secure, root);
  const res = await createCertificate(
    client,
    { csr: csr.csrPem },
    await token(meshd, namespace, serviceAccount),
  );
  client.close();
  if (!("certChain" in res)) throw new Error(`no certificate: ${res.details}`);
  const dir = join(meshd.dir, `certs-${namespace}`);
  await Deno.mkdir(dir);
  await Deno.writeTextFile(join(dir, CERT_DIR_FILES.certChain), res.certChain.join(""));
  await Deno.writeTextFile(join(dir, CERT_DIR_FILES.key), csr.privateKeyPem);
  await Deno.writeTextFile(join(dir, CERT_DIR_FILES.root), root);
  return dir;
}

/** The live commands, each a list of arguments; the ones whose output must equal the HTTP mode's. */
const COMMANDS: string[][] = [
  ["experimental", "internal-debug", "syncz"],
  ["experimental", "internal-debug", "configz"],
  ["experimental", "internal-debug", "registryz"],
  ["experimental", "internal-debug", "config_dump?proxyID=foo/httpbin-1"],
  ["proxy-status"],
  ["proxy-status", "httpbin-1.foo"],
  ["version", "--short=false", "-o", "json"],
  ["analyze"],
  ["experimental", "authz", "check", "httpbin-1.foo"],
  ["proxy-config", "listener", "httpbin-1.foo"],
];

Deno.test("meshctl over xDS: every live command as over HTTP, with a certificate, a token or plain text; refusals", async (t) => {
  const meshd = await startLiveMeshd(CONFIG, { env: { XDS_AUTH_PLAINTEXT: "true" } });
  const proxies: LiveProxy[] = [];
  try {
    proxies.push(
      await startLiveProxy(meshd, {
        namespace: "foo",
        name: "httpbin-1",
        serviceAccount: "httpbin",
        ip: "10.1.0.2",
        inbound: [HTTP_PORT],
      }),
    );
    const secure = `127.0.0.1:${meshd.ports.secure}`;
    const plain = `127.0.0.1:${meshd.ports.grpc}`;
    const system = await certDir(meshd, "mesh-system", "meshctl");
    const foo = await certDir(meshd, "foo", "sleep");
    const rootOnly = join(meshd.dir, "root-only");
    await Deno.mkdir(rootOnly);
    await Deno.copyFile(join(system, CERT_DIR_FILES.root), join(rootOnly, CERT_DIR_FILES.root));
    const systemToken = await token(meshd, "mesh-system", "meshctl");
    const http = async (args: string[]) => {
      const r = await meshctl([...args, "--debug-address", meshd.debugAddress]);
      assert.equal(r.code, 0, `${args.join(" ")} over HTTP: ${r.err}`);
      return r.out;
    };
    const expected = new Map<string, string>();
    // admin log talks to ctrlz over HTTP, on the host of --xds-address.
    const commands = [...COMMANDS, ["admin", "log", "--ctrlz_port", String(meshd.ports.ctrlz), "-o", "json"]];
    for (const args of commands) expected.set(args.join(" "), await http(args));

    await t.step(
      "--cert-dir with a mesh-system certificate: every command's output equals the HTTP mode's",
      async () => {
        for (const args of commands) {
          const r = await meshctl([...args, "--xds-address", secure, "--cert-dir", system]);
          assert.equal(r.code, 0, `${args.join(" ")}: ${r.err}`);
          assert.equal(r.out, expected.get(args.join(" ")), args.join(" "));
        }
      },
    );

    await t.step("a token (env MESHCTL_XDS_TOKEN or --xds-token-file) with only root-cert.pem", async () => {
      const args = ["experimental", "internal-debug", "syncz"];
      const env = await meshctl([...args, "--xds-address", secure, "--cert-dir", rootOnly], {
        env: { MESHCTL_XDS_TOKEN: systemToken },
      });
      assert.equal(env.code, 0, env.err);
      assert.equal(env.out, expected.get(args.join(" ")));
      const file = join(meshd.dir, "meshctl.token");
      await Deno.writeTextFile(file, systemToken + "\n");
      const ps = await meshctl([
        "proxy-status",
        "--xds-address",
        secure,
        "--cert-dir",
        rootOnly,
        "--xds-token-file",
        file,
      ]);
      assert.equal(ps.code, 0, ps.err);
      assert.equal(ps.out, expected.get("proxy-status"));
    });

    await t.step(
      "--plaintext with a token (meshd has XDS_AUTH_PLAINTEXT=true); --xds-port completes a bare host",
      async () => {
        for (const args of [COMMANDS[0], COMMANDS[5], COMMANDS[6]]) {
          const r = await meshctl([
            ...args,
            "--xds-address",
            "127.0.0.1",
            "--xds-port",
            String(meshd.ports.grpc),
            "--plaintext",
          ], {
            env: { MESHCTL_XDS_TOKEN: systemToken },
          });
          assert.equal(r.code, 0, `${args.join(" ")}: ${r.err}`);
          assert.equal(r.out, expected.get(args.join(" ")), args.join(" "));
        }
      },
    );

    await t.step("--insecure skips verifying meshd: a wrong --authority then still works", async () => {
      const r = await meshctl([
        "experimental",
        "internal-debug",
        "mesh",
        "--xds-address",
        secure,
        "--cert-dir",
        system,
        "--insecure",
        "--authority",
        "wrong.example",
      ]);
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(JSON.parse(r.out), {
        rootNamespace: "mesh-system",
        trustDomain: "cluster.local",
        pathNormalization: "DECODE_AND_MERGE_SLASHES",
      });
    });

    await t.step(
      "the debug client is not a proxy: not in syncz, connections or meshd's proxy metrics",
      async () => {
        const client = new XdsDebugClient(secure, {
          timeoutMs: 10_000,
          rootsPem: await Deno.readTextFile(join(rootOnly, CERT_DIR_FILES.root)),
          token: systemToken,
        });
        const syncz = await client.json<{ workload: string }[]>("/debug/syncz");
        assert.deepEqual(syncz.map((s) => s.workload), ["foo/httpbin-1"]);
        const connections = await client.json<{ workload: string }[]>("/debug/connections");
        assert.deepEqual(connections.map((c) => c.workload), ["foo/httpbin-1"]);
        const metrics = await (await fetch(`http://127.0.0.1:${meshd.ports.monitoring}/metrics`)).text();
        assert.match(metrics, /^disco_xds 1$/m);
        assert.equal(
          await client.text("rootCert"),
          await Deno.readTextFile(join(rootOnly, CERT_DIR_FILES.root)),
        );
        client.close();
      },
    );

    await t.step("refusals name the address, the type URL and meshd's reason", async () => {
      const fails = async (args: string[], pattern: RegExp, env?: Record<string, string>) => {
        const r = await meshctl(args, { env });
        assert.equal(r.code, 1, `${args.join(" ")}: ${r.out}`);
        assert.match(r.err, pattern);
      };
      const debug = (
        page: string,
        dir: string,
      ) => ["experimental", "internal-debug", page, "--xds-address", secure, "--cert-dir", dir];
      await fails(
        debug("syncz", rootOnly),
        new RegExp(`at ${secure}: istio\\.io/debug/syncz: UNAUTHENTICATED: authentication required`),
      );
      await fails(debug("syncz", rootOnly), /UNAUTHENTICATED: .*token: signature does not verify/, {
        MESHCTL_XDS_TOKEN: systemToken.slice(0, -4) + "AAAA",
      });
      await fails(
        debug("configz", foo),
        /istio\.io\/debug\/configz: PERMISSION_DENIED: .*spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep/,
      );
      await fails(
        debug("config_dump?proxyID=foo/nope", system),
        /NOT_FOUND: proxy "foo\/nope" is not connected/,
      );
      await fails(debug("nope", system), /istio\.io\/debug\/nope: NOT_FOUND: no debug page "nope"/);
      await fails(["proxy-status", "--xds-address", secure], /no root certificate to verify meshd with/);
      await fails(
        ["proxy-status", "--xds-address", plain, "--plaintext"],
        /UNAUTHENTICATED: authentication required/,
      );
      await fails(
        ["proxy-status", "--xds-label", "app=meshd"],
        /no orchestrator configuration: give -c\/--orchconfig/,
      );
      await fails(
        ["proxy-status", "--cert-dir", system],
        /--cert-dir applies to debug requests over xDS: give meshd's address/,
      );
      await fails(
        ["proxy-status", "--xds-address", `127.0.0.1:${freePort()}`, "--plaintext", "--timeout", "2s"],
        /meshd over xDS \(--xds-address, plain text\) at 127\.0\.0\.1:\d+: istio\.io\/debug\/syncz: UNAVAILABLE/,
      );
      const group = join(meshd.dir, "wg.yaml");
      await Deno.writeTextFile(
        group,
        "apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: vm, namespace: foo}\nspec: {template: {serviceAccount: vmsa}}\n",
      );
      await fails(
        [
          "experimental",
          "workload",
          "entry",
          "configure",
          "-f",
          group,
          "-o",
          join(meshd.dir, "vm"),
          "--xds-address",
          secure,
          "--cert-dir",
          system,
        ],
        /\/debug\/bootstrapToken is not available over xDS: .*--debug-address/,
      );
      const wrongName = await meshctl([
        "version",
        "--xds-address",
        secure,
        "--cert-dir",
        system,
        "--authority",
        "wrong.example",
      ]);
      assert.equal(wrongName.code, 0, "version warns and still prints the client version");
      assert.match(wrongName.err, /control plane version unavailable: .*UNAVAILABLE/);
    });

    await t.step("a non-system identity sees only its own namespace's proxies", async () => {
      const own = await meshctl([
        "experimental",
        "internal-debug",
        "syncz",
        "--xds-address",
        secure,
        "--cert-dir",
        foo,
      ]);
      assert.equal(own.code, 0, own.err);
      assert.deepEqual(JSON.parse(own.out).map((s: { workload: string }) => s.workload), ["foo/httpbin-1"]);
      const bar = await certDir(meshd, "bar", "client");
      const none = await meshctl(["proxy-status", "--xds-address", secure, "--cert-dir", bar]);
      assert.equal(none.code, 0, none.err);
      assert.match(none.out, /no proxy is connected/);
    });
  } finally {
    for (const p of proxies) await p.stop();
    await meshd.stop();
  }
});
