/**
 * The lab as a Kubernetes node (`lab up --kubernetes`, deploy/lab/node_agent/): Istio's httpbin and sleep
 * samples, unchanged, applied with kubectl to foo (`mesh-injection=enabled`), bar
 * (`istio-injection=enabled`) and legacy; meshd's webhook injects the sidecars, the node agent runs the
 * pods, publishes their EndpointSlices and programs the cluster IPs; then Istio's Mutual TLS Migration
 * matrix with real curl and httpbin while PeerAuthentications are applied with kubectl. Also: an image
 * outside the node's table is refused with ErrImagePull in the pod's status; `kubectl scale` of a
 * Deployment adds and removes pods (and their network namespaces) and the Service's endpoints follow.
 * The injected `mesh-init` script captures every outbound TCP connection of a pod: one to a
 * destination in no Service (an echo in meshd's namespace) is passed through by the sidecar.
 * Lab name `kn<pid>`, subnet 10.254.0.0/24.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labDown, labUnavailable, labUp } from "../../deploy/lab/mod.ts";
import { listNetns } from "../../deploy/lab/host.ts";
import { expectStage, kubectl } from "./lab_kube_support.ts";
import { adoptSamplePods, applySamples } from "../../deploy/quickstart/kube_samples.ts";
import { findWorkload, probe, run, xfccOf } from "../../deploy/lab/mod.ts";
import { roundTrip } from "../../proxy/capture/netns_test_support.ts";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const unavailable = labUnavailable() ?? httpbinMissing() ?? commandMissing("kubectl") ??
  commandMissing("nsenter") ?? commandMissing("socat");

/** Whether a pod's Ready condition is True. */
function isReady(pod: { status?: { conditions?: { type: string; status: string }[] } }): boolean {
  return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** Polls `check` every 200 ms until it returns true, at most `ms`. */
async function eventually(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

Deno.test(requires(unavailable, {
  name:
    "lab --kubernetes: Istio's samples injected by meshd's webhook and run by the node agent; the matrix holds",
  async fn() {
    const name = `kn${Deno.pid}`;
    await labDown(name);
    try {
      const state = await labUp(join(ROOT, "deploy/lab/kubernetes.yaml"), {
        name,
        subnet: "10.254.0.0/24",
        kubernetes: true,
      });
      await applySamples(name);
      await adoptSamplePods(state, 60_000);

      // Injected by meshd's webhook (foo by mesh-injection, bar by Istio's label), legacy not.
      for (const [ns, injected] of [["foo", true], ["bar", true], ["legacy", false]] as const) {
        const pods = JSON.parse(
          await kubectl(name, ["get", "pods", "-n", ns, "-l", "app=httpbin", "-o", "json"]),
        );
        const pod = pods.items[0];
        const containers = pod.spec.containers.map((c: { name: string }) => c.name);
        assert.equal(containers.includes("mesh-proxy"), injected, `${ns}: ${containers}`);
        assert.equal(pod.metadata.annotations?.["sidecar.mesh.io/status"] !== undefined, injected);
        assert.match(pod.status.podIP, /^10\.254\.0\.\d+$/);
        assert.equal(pod.status.phase, "Running");
        const slices = JSON.parse(
          await kubectl(name, [
            "get",
            "endpointslices",
            "-n",
            ns,
            "-l",
            "kubernetes.io/service-name=httpbin",
            "-o",
            "json",
          ]),
        );
        assert.deepEqual(
          slices.items.flatMap((
            s: { endpoints: { addresses: string[]; conditions: { ready: boolean } }[] },
          ) => s.endpoints.map((e) => [e.addresses[0], e.conditions.ready])),
          [[pod.status.podIP, true]],
        );
      }

      await expectStage(state, "no policy");
      // lab exec finds pods by name or app label; meshd's namespace reaches Services too (jwksUri).
      const sleepPod = await findWorkload(name, "foo/sleep");
      assert.match(sleepPod.netns, new RegExp(`^${name}_foo_sleep-[0-9a-f]{10}-[a-z0-9]+$`));
      assert.equal((await findWorkload(name, `foo/${sleepPod.name}`)).netns, sleepPod.netns);
      const fromMeshd = await run("ip", [
        "netns",
        "exec",
        `${name}_meshd`,
        "curl",
        "-s",
        "-m",
        "5",
        "http://httpbin.legacy:8000/ip",
      ]);
      assert.equal(fromMeshd.code, 0, fromMeshd.stderr);
      assert.match(fromMeshd.stdout, /"origin"/);
      // Every outbound TCP connection is captured by the injected init container's rules, not only the
      // Service range: a destination in no Service is passed through by sleep's sidecar (counted).
      const echo = new Deno.Command("ip", {
        args: [
          "netns",
          "exec",
          `${name}_meshd`,
          "socat",
          "-t",
          "5",
          "TCP-LISTEN:17000,fork,reuseaddr",
          "EXEC:cat",
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        const sleepExec = ["ip", "netns", "exec", sleepPod.netns];
        const passthrough = async () => {
          const stats = await run("ip", [
            ...sleepExec.slice(1),
            "curl",
            "-s",
            "http://127.0.0.1:15000/stats",
          ]);
          return Number(
            /^tcp\.PassthroughCluster\.downstream_cx_total: (\d+)$/m.exec(stats.stdout)?.[1] ?? 0,
          );
        };
        const before = await passthrough();
        let echoed = await roundTrip(sleepExec, state.plan!.meshd.address, 17000, 100_000);
        for (let i = 0; i < 25 && echoed.got === 0; i++) {
          await new Promise((r) => setTimeout(r, 200)); // socat's listen
          echoed = await roundTrip(sleepExec, state.plan!.meshd.address, 17000, 100_000);
        }
        assert.deepEqual(echoed, { sent: 100_000, got: 100_000, same: true, error: null });
        assert.ok((await passthrough()) > before, "the connection went through sleep's sidecar");
      } finally {
        echo.kill("SIGKILL");
        await echo.status;
      }
      // The sidecars' certificates come from their projected tokens (TokenReview): sleep's identity reaches httpbin.
      const headers = await probe(
        state.plan!.workloads.find((w) => w.namespace === "foo" && w.name === "sleep")!,
        "http://httpbin.bar:8000/headers",
      );
      assert.ok(
        xfccOf(headers)?.split(";").includes("URI=spiffe://cluster.local/ns/foo/sa/sleep"),
        headers.body,
      );

      await kubectl(name, [
        "apply",
        "-f",
        join(ROOT, "deploy/quickstart/peer_authentication_foo_strict.yaml"),
      ]);
      await expectStage(state, "STRICT in foo");
      await kubectl(name, [
        "apply",
        "-f",
        join(ROOT, "deploy/quickstart/peer_authentication_mesh_strict.yaml"),
      ]);
      await expectStage(state, "STRICT mesh-wide");

      // Readiness probes under STRICT mutual TLS: meshd's injector rewrote them to the proxy's status port,
      // where the node agent runs them; a probe that fails keeps its pod out of the Service.
      const probed = (name: string, path: string) =>
        `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: foo, labels: {app: probed}}\nspec:\n` +
        `  containers:\n  - name: web\n    image: docker.io/mccutchen/go-httpbin:v2.15.0\n` +
        `    ports: [{name: http, containerPort: 8080}]\n` +
        `    readinessProbe: {httpGet: {path: ${path}, port: http}, periodSeconds: 1}\n`;
      await kubectl(
        name,
        ["apply", "-f", "-"],
        probed("probed-ok", "/status/200") + "---\n" + probed("probed-bad", "/status/500"),
      );
      const podJson = async (pod: string) =>
        JSON.parse(await kubectl(name, ["get", "pod", pod, "-n", "foo", "-o", "json"]));
      await eventually("probed-ok ready", 30_000, async () => {
        const pod = await podJson("probed-ok");
        return isReady(pod);
      });
      const bad = await podJson("probed-bad");
      assert.deepEqual(bad.spec.containers[0].readinessProbe.httpGet, {
        path: "/app-health/web/readyz",
        port: 15020,
        scheme: "HTTP",
      });
      assert.equal(bad.status.phase, "Running");
      assert.ok(
        !isReady(bad),
      );
      await kubectl(
        name,
        ["apply", "-f", "-"],
        "apiVersion: v1\nkind: Service\nmetadata: {name: probed, namespace: foo}\nspec:\n  selector: {app: probed}\n  ports: [{name: http, port: 8000, targetPort: 8080}]\n",
      );
      await eventually("the probed Service's endpoints", 10_000, async () => {
        const s = JSON.parse(
          await kubectl(name, [
            "get",
            "endpointslices",
            "-n",
            "foo",
            "-l",
            "kubernetes.io/service-name=probed",
            "-o",
            "json",
          ]),
        );
        const eps = s.items.flatMap((
          x: { endpoints: { targetRef: { name: string }; conditions: { ready: boolean } }[] },
        ) => x.endpoints.map((e) => `${e.targetRef.name}=${e.conditions.ready}`)).sort();
        return JSON.stringify(eps) === JSON.stringify(["probed-bad=false", "probed-ok=true"]);
      });

      // A container whose process ends is restarted (restartCount), and its pod is Ready again.
      const legacyHttpbin =
        JSON.parse(await kubectl(name, ["get", "pods", "-n", "legacy", "-l", "app=httpbin", "-o", "json"]))
          .items[0];
      const netns = `${name}_legacy_${legacyHttpbin.metadata.name}`;
      const pids = (await new Deno.Command("ip", { args: ["netns", "pids", netns] }).output()).stdout;
      for (const pid of new TextDecoder().decode(pids).trim().split("\n")) Deno.kill(Number(pid), "SIGKILL");
      await eventually("httpbin restarted and Ready", 30_000, async () => {
        const pod = JSON.parse(
          await kubectl(name, ["get", "pod", legacyHttpbin.metadata.name, "-n", "legacy", "-o", "json"]),
        );
        return pod.status.containerStatuses[0].restartCount >= 1 &&
          isReady(pod);
      });

      // A changed template rolls the Deployment: a pod of the new template replaces the old one.
      const sleepPods = async () =>
        JSON.parse(await kubectl(name, ["get", "pods", "-n", "legacy", "-l", "app=sleep", "-o", "json"]))
          .items
          .map((p: { metadata: { name: string } }) => p.metadata.name);
      const [before] = await sleepPods();
      await kubectl(name, [
        "patch",
        "deployment",
        "sleep",
        "-n",
        "legacy",
        "--type=merge",
        "-p",
        '{"spec":{"template":{"metadata":{"annotations":{"rolled":"1"}}}}}',
      ]);
      await eventually("a new sleep pod instead of the old one", 30_000, async () => {
        const now = await sleepPods();
        return now.length === 1 && now[0] !== before;
      });

      // A pod whose ConfigMap is not there yet waits (ContainerCreating, naming it), and starts once it is.
      await kubectl(
        name,
        ["apply", "-f", "-"],
        `apiVersion: v1
kind: Pod
metadata: {name: waits, namespace: legacy}
spec:
  containers:
  - {name: c, image: curlimages/curl, command: [/bin/sleep, infinity], volumeMounts: [{name: cfg, mountPath: /run/${name}-cfg}]}
  volumes: [{name: cfg, configMap: {name: later}}]
`,
      );
      const waitsPod = async () =>
        JSON.parse(await kubectl(name, ["get", "pod", "waits", "-n", "legacy", "-o", "json"]));
      await eventually(
        "waits is waiting for its ConfigMap",
        10_000,
        async () =>
          (await waitsPod()).status?.containerStatuses?.[0]?.state?.waiting?.message ===
            'volume cfg: configmap "later" not found',
      );
      await kubectl(
        name,
        ["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later, namespace: legacy}\ndata: {k: v}\n",
      );
      await eventually("waits Ready", 10_000, async () => isReady(await waitsPod()));

      // An image outside the node's table: refused as a kubelet that cannot pull it.
      await kubectl(
        name,
        ["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: legacy}\nspec:\n  containers: [{name: web, image: nginx:1.27}]\n",
      );
      await eventually("ErrImagePull", 10_000, async () => {
        const pod = JSON.parse(await kubectl(name, ["get", "pod", "web", "-n", "legacy", "-o", "json"]));
        const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
        if (waiting?.reason !== "ErrImagePull") {
          return false;
        }
        assert.match(
          waiting.message,
          /container web: image "nginx:1\.27" is not in the lab node's image table/,
        );
        return true;
      });

      assert.match(
        await kubectl(name, ["get", "pod", "web", "-n", "legacy", "--no-headers"]),
        /^web\s+0\/1\s+ErrImagePull\s/,
      );

      // kubectl scale: the Deployment controller adds a pod, the Service gets its endpoint; scaling down removes both.
      const httpbinNetns = async () =>
        (await listNetns()).filter((n) => n.startsWith(`${name}_bar_httpbin-`));
      const readyEndpoints = async () => {
        const s = JSON.parse(
          await kubectl(name, [
            "get",
            "endpointslices",
            "-n",
            "bar",
            "-l",
            "kubernetes.io/service-name=httpbin",
            "-o",
            "json",
          ]),
        );
        return s.items.flatMap((x: { endpoints: { conditions: { ready: boolean } }[] }) =>
          x.endpoints.filter((e) => e.conditions.ready)
        ).length;
      };
      await kubectl(name, ["scale", "deployment", "httpbin", "-n", "bar", "--replicas=2"]);
      await eventually("2 ready endpoints", 30_000, async () => (await readyEndpoints()) === 2);
      assert.equal((await httpbinNetns()).length, 2);
      await kubectl(name, ["scale", "deployment", "httpbin", "-n", "bar", "--replicas=1"]);
      await eventually(
        "1 endpoint, 1 network namespace",
        30_000,
        async () => (await readyEndpoints()) === 1 && (await httpbinNetns()).length === 1,
      );
      await adoptSamplePods(state, 30_000); // legacy/sleep is a new pod since the rollout
      await expectStage(state, "STRICT mesh-wide");
    } finally {
      const report = await labDown(name);
      // The mount point the agent made on the host for the pod "waits" (as a kubelet makes its own).
      await Deno.remove(`/run/${name}-cfg`).catch(() => {});
      assert.deepEqual(
        (await listNetns()).filter((n) => n.startsWith(`${name}_`)),
        [],
        JSON.stringify(report),
      );
    }
  },
}));
