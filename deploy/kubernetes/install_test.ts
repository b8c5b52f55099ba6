/**
 * The install, end to end on the test API server (deploy/lab/kube_api): the operator's steps of
 * README.md ("Install") with kubectl, then meshd run as its Deployment runs it (the container's flags
 * and environment, read from meshd.yaml; listen addresses on free loopback ports; `--kubeconfig` in
 * place of the in-cluster config; an empty temporary directory for the Deployment's emptyDir
 * ROOT_CA_DIR). No hand step: meshd creates the self-signed root's Secret `mesh-ca-secret`. An
 * EndpointSlice stands in for the kubelet and the endpoints controller; meshd, elected leader through
 * its Lease, patches that root into the caBundle of both webhook configurations and publishes it as the
 * ConfigMap `mesh-ca-root-cert` in every namespace. Then, through the webhooks of webhooks.yaml: an
 * invalid AuthorizationPolicy is refused by `kubectl apply` with the field named, a pod in a namespace
 * labelled mesh-injection=enabled gets the sidecar (and its namespace the root ConfigMap), and a pod in
 * mesh-system does not.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { startKubeApi } from "../lab/kube_api/mod.ts";
import { loadManifests, MANIFESTS_DIR } from "./manifests.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const docs = await loadManifests();

async function run(command: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command(command, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${command} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return text;
}

const WEBHOOK_CONFIGS = [
  ["mutatingwebhookconfiguration", "mesh-sidecar-injector"],
  ["validatingwebhookconfiguration", "mesh-mesh-system"],
];

function meshdContainer(): { args: string[]; env: { name: string; value?: string }[] } {
  const d = docs.find((d) =>
    d.object.kind === "Deployment" && (d.object.metadata as { name: string }).name === "meshd"
  );
  const spec = d?.object.spec as { template: { spec: { containers: { args: string[]; env: [] }[] } } };
  return spec.template.spec.containers[0];
}

Deno.test(
  requires(commandMissing("kubectl"), {
    name:
      "install: kubectl applies deploy/kubernetes, meshd runs with its Deployment's settings, its webhooks validate and inject",
    async fn() {
      const api = await startKubeApi();
      const dir = await Deno.makeTempDir({ prefix: "mesh-install-" });
      let meshd: Deno.ChildProcess | undefined;
      let stopped = false;
      try {
        const kubectl = (args: string[], stdin?: string) =>
          run("kubectl", ["--kubeconfig", api.kubeconfig, ...args], stdin);
        const m = MANIFESTS_DIR.pathname;
        // No hand step: no cacerts Secret, no root ConfigMap. ROOT_CA_DIR is the Deployment's emptyDir.
        await kubectl(["apply", "-f", join(m, "namespace.yaml")]);
        await kubectl(["apply", "-f", join(m, "crds.yaml")]);
        await kubectl(["apply", "-k", m]);

        const c = meshdContainer();
        const meshConfig = docs.find((d) => d.object.kind === "ConfigMap")?.object.data as { mesh: string };
        await Deno.writeTextFile(join(dir, "mesh"), meshConfig.mesh);
        const args = c.args.map((a) => {
          if (/^--(grpcAddr|secureGRPCAddr|httpsAddr|monitoringAddr|httpAddr)=/.test(a)) {
            return a.replace(/=.*/, "=127.0.0.1:0");
          }
          if (a.startsWith("--meshConfig=")) return `--meshConfig=${join(dir, "mesh")}`;
          return a;
        });
        const env: Record<string, string> = { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "" };
        for (const name of ["HOME", "DENO_DIR"]) if (Deno.env.get(name)) env[name] = Deno.env.get(name)!;
        for (const e of c.env) if (e.value !== undefined) env[e.name] = e.value;
        Object.assign(env, {
          POD_NAME: "meshd-0",
          POD_NAMESPACE: "mesh-system",
          ROOT_CA_DIR: join(dir, "ca-emptydir"),
        });
        meshd = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--allow-read",
            "--allow-write",
            "--allow-net",
            "--allow-env",
            "--allow-sys",
            "--allow-run",
            join(ROOT, "meshd/main.ts"),
            ...args,
            "--ctrlz_port=0",
            `--kubeconfig=${api.kubeconfig}`,
          ],
          cwd: dir,
          clearEnv: true,
          env,
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        let log = "";
        const collect = async (s: ReadableStream<Uint8Array>) => {
          for await (const t of s.pipeThrough(new TextDecoderStream())) log += t;
        };
        const reading = Promise.all([collect(meshd.stdout), collect(meshd.stderr)]);
        let exited = false;
        const status = meshd.status.then((s) => (exited = true, s));
        const ready = async (): Promise<number> => {
          while (!exited && !stopped) {
            const port = /webhooks listening on [\d.]+:(\d+)/.exec(log)?.[1];
            if (port && log.includes("meshd ready")) return Number(port);
            await new Promise((r) => setTimeout(r, 50));
          }
          throw new Error(`meshd exited before it was ready:\n${log}`);
        };
        const webhookPort = await within(ready(), 30_000, `meshd ready (log so far: ${log})`);

        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "discovery.k8s.io/v1",
            kind: "EndpointSlice",
            metadata: {
              name: "meshd-0",
              namespace: "mesh-system",
              labels: { "kubernetes.io/service-name": "meshd" },
            },
            addressType: "IPv4",
            ports: [{ name: "https-webhook", port: webhookPort, protocol: "TCP" }],
            endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
          }),
        );
        // meshd made the self-signed root's Secret (no cacerts was given) and, the leader (the only
        // replica), patches that root into both configurations and publishes it in every namespace.
        const secret = JSON.parse(
          await kubectl(["get", "secret", "mesh-ca-secret", "-n", "mesh-system", "-o", "json"]),
        );
        assert.equal(secret.type, "mesh.io/ca-root");
        const roots = atob(secret.data["root-cert.pem"]);
        assert.match(roots, /^-----BEGIN CERTIFICATE-----/);
        const patched = async () => {
          for (const [kind, name] of WEBHOOK_CONFIGS) {
            const config = JSON.parse(await kubectl(["get", kind, name, "-o", "json"]));
            const bundles = config.webhooks.map((w: { clientConfig: { caBundle?: string } }) =>
              w.clientConfig.caBundle
            );
            if (!bundles.every((b: string | undefined) => b !== undefined && atob(b) === roots)) return false;
          }
          return true;
        };
        const deadline = Date.now() + 15_000;
        while (!(await patched())) {
          if (Date.now() > deadline) throw new Error(`meshd did not patch the caBundle; log:\n${log}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.match(
          await kubectl(["get", "lease", "meshd-leader", "-n", "mesh-system", "-o", "yaml"]),
          /holderIdentity: meshd-0/,
        );

        const refused = await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "security.mesh.io/v1",
            kind: "AuthorizationPolicy",
            metadata: { name: "bad", namespace: "mesh-system" },
            spec: { action: "DENYY", rules: [{}] },
          }),
        ).then(() => "accepted", (e: Error) => e.message);
        assert.match(
          refused,
          /admission webhook "rev\.validation\.mesh\.io" denied the request: .*spec\.action: must be one of/,
        );

        const namespace = {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: "foo", labels: { "mesh-injection": "enabled" } },
        };
        await kubectl(
          ["apply", "-f", "-"],
          [namespace, pod("foo"), pod("mesh-system")].map((o) => stringify(o)).join("---\n"),
        );
        const names = async (ns: string) => {
          const p = JSON.parse(await kubectl(["get", "pod", "sleep", "-n", ns, "-o", "json"]));
          return [...(p.spec.initContainers ?? []), ...p.spec.containers].map((c: { name: string }) =>
            c.name
          );
        };
        assert.deepEqual(await names("foo"), ["mesh-init", "sleep", "mesh-proxy"]);
        assert.deepEqual(await names("mesh-system"), ["sleep"]);
        // The injected pod's root volume: the ConfigMap meshd published in foo, made after meshd started.
        const rootMap = async (ns: string) => {
          const cm = await kubectl(["get", "configmap", "mesh-ca-root-cert", "-n", ns, "-o", "json"]).catch(
            () => "{}",
          );
          return (JSON.parse(cm).data ?? {})["root-cert.pem"];
        };
        const published = Date.now() + 10_000;
        while ((await rootMap("foo")) !== roots || (await rootMap("mesh-system")) !== roots) {
          if (Date.now() > published) throw new Error(`no mesh-ca-root-cert with the root; log:\n${log}`);
          await new Promise((r) => setTimeout(r, 100));
        }

        // --shutdownDuration is 10 s; on a cluster the kubelet waits 30 s, then kills.
        meshd.kill("SIGTERM");
        const code = (await within(
          status,
          20_000,
          "meshd's exit after SIGTERM while the API server is up (its watches or webhook connections keep it running?)",
        )).code;
        assert.equal(code, 0, log);
        await reading;
        meshd = undefined;
      } finally {
        stopped = true;
        if (meshd) {
          meshd.kill("SIGKILL");
          await meshd.status;
          await meshd.stdout.cancel().catch(() => {});
          await meshd.stderr.cancel().catch(() => {});
        }
        await api.stop();
        await Deno.remove(dir, { recursive: true });
      }
    },
  }),
);

function pod(namespace: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "sleep", namespace, labels: { app: "sleep" } },
    spec: {
      containers: [{
        name: "sleep",
        image: "curlimages/curl",
        command: ["sleep", "3600"],
        ports: [{ containerPort: 8080 }],
      }],
    },
  };
}
