/**
 * The lab node agent's loop: level-triggered, it lists the API's objects every `intervalMs` and acts
 * as the controllers of a one-node cluster: a scheduler (sets `spec.nodeName`), the Deployment
 * controller (Deployment → Pods directly, no ReplicaSets; a changed template rolls, a deleted Deployment's
 * pods are deleted), the ServiceAccount controller (`default` per namespace), the kubelet (pod_runtime.ts: runs pods, reports IP, phase and readiness),
 * the EndpointSlice controller and kube-proxy and DNS (desired.ts: DNAT rules and hosts files).
 *
 * @module
 */
import { isAlive, run } from "../host.ts";
import {
  dnatRules,
  endpointSliceFor,
  MANAGED_BY,
  type Obj,
  podFromDeployment,
  podHostsFile,
  podReady,
  type ServiceRoute,
  serviceRoutes,
  SERVICES_CHAIN,
  templateHash,
} from "./desired.ts";
import {
  createPodNetwork,
  hasSidecar,
  type NodeContext,
  plannedRuns,
  refreshToken,
  removePod,
  type RunningPod,
  startPod,
  VolumeNotReady,
} from "./pod_runtime.ts";
import { MESHD_HOST } from "../../../shared/internal/lab/plan.ts";
import type { NodePod } from "../../../shared/internal/lab/node_pods.ts";
import { probePeriodMs, readinessCheck } from "./probes.ts";

/** The agent's state between passes. */
export class NodeAgent {
  readonly pods = new Map<string, RunningPod>();
  readonly #failed = new Set<string>();
  readonly #starting = new Set<string>();
  /** Why a pod waits for its volumes (VolumeNotReady), by uid. */
  readonly #waiting = new Map<string, string>();
  #hosts = "";
  #dnat = "";
  #routes: ServiceRoute[] = [];

  constructor(
    readonly ctx: NodeContext,
    readonly meshdIp: string,
    readonly meshdNetns: string,
    readonly podsFile: string,
    readonly log: (line: string) => void,
  ) {}

  async #list(path: string): Promise<Obj[]> {
    return (await this.ctx.api.json<{ items: Obj[] }>("GET", path)).items;
  }

  async #send(method: string, path: string, body: unknown, contentType?: string): Promise<void> {
    const r = await this.ctx.api.request(method, path, { body, contentType });
    const text = await r.text();
    if (!r.ok && r.status !== 409) this.log(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
  }

  /** One pass over everything. */
  async pass(): Promise<void> {
    const namespaces = await this.#list("/api/v1/namespaces");
    await this.#namespaceObjects(namespaces);
    await this.#deployments();
    const pods = await this.#list("/api/v1/pods");
    await this.#schedule(pods);
    await this.#kubelet(pods);
    const services = await this.#list("/api/v1/services");
    await this.#endpointSlices(services, await this.#list("/api/v1/pods"));
    this.#routes = serviceRoutes(services, await this.#list("/apis/discovery.k8s.io/v1/endpointslices"));
    await this.#network();
    await this.#recordPods();
  }

  #recorded = "";

  /** Writes the running pods as lab workloads (shared/internal/lab/node_pods.ts) when they changed. */
  async #recordPods(): Promise<void> {
    const pods: NodePod[] = [...this.pods.values()].map((p) => ({
      name: p.name,
      namespace: p.namespace,
      serviceAccount: p.serviceAccount,
      labels: p.labels,
      command: [],
      containerPorts: p.ports,
      services: [],
      sidecar: p.sidecar,
      gateway: false,
      netns: p.netns,
      address: p.ip,
      hubLink: `p${p.index}`,
      ready: p.ready,
    }));
    const text = JSON.stringify(pods, null, 1);
    if (text === this.#recorded) return;
    await Deno.writeTextFile(`${this.podsFile}.tmp`, text);
    await Deno.rename(`${this.podsFile}.tmp`, this.podsFile);
    this.#recorded = text;
  }

  /** A `default` ServiceAccount in every namespace (the root ConfigMap is meshd's: its leader publishes it). */
  async #namespaceObjects(namespaces: Obj[]): Promise<void> {
    const sas = await this.#list("/api/v1/serviceaccounts");
    for (const ns of namespaces) {
      const n = ns.metadata.name;
      if (ns.metadata.deletionTimestamp) continue;
      if (!sas.some((s) => s.metadata.namespace === n && s.metadata.name === "default")) {
        await this.#send("POST", `/api/v1/namespaces/${n}/serviceaccounts`, {
          apiVersion: "v1",
          kind: "ServiceAccount",
          metadata: { name: "default", namespace: n },
        });
      }
    }
  }

  async #deployments(): Promise<void> {
    const deployments = await this.#list("/apis/apps/v1/deployments");
    const pods = await this.#list("/api/v1/pods");
    const uids = new Set(deployments.map((d) => d.metadata.uid));
    for (const p of pods) {
      const owner = p.metadata.ownerReferences?.find((o) => o.kind === "Deployment");
      if (owner && !uids.has(owner.uid)) {
        await this.#send(
          "DELETE",
          `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`,
          undefined,
        );
      }
    }
    for (const d of deployments) {
      const ns = d.metadata.namespace;
      const owned = pods.filter((p) => p.metadata.ownerReferences?.some((o) => o.uid === d.metadata.uid));
      const want = d.spec?.replicas ?? 1;
      // A rolling update in its simplest form: pods of the current template up to the replicas, then
      // the older ones deleted once as many current ones are Ready.
      const hash = templateHash(d.spec?.template ?? {});
      const current = owned.filter((p) => p.metadata.labels?.["pod-template-hash"] === hash);
      const stale = owned.filter((p) => !current.includes(p));
      for (let i = current.length; i < want; i++) {
        await this.#send("POST", `/api/v1/namespaces/${ns}/pods`, podFromDeployment(d));
      }
      const doomed = [...current.slice(want), ...(current.filter(podReady).length >= want ? stale : [])];
      for (const extra of doomed) {
        await this.#send("DELETE", `/api/v1/namespaces/${ns}/pods/${extra.metadata.name}`, undefined);
      }
      const ready = owned.filter(podReady).length;
      const status = {
        replicas: owned.length,
        readyReplicas: ready,
        availableReplicas: ready,
        updatedReplicas: current.length,
      };
      if (JSON.stringify(d.status ?? {}) !== JSON.stringify({ ...(d.status ?? {}), ...status })) {
        await this.#send("PATCH", `/apis/apps/v1/namespaces/${ns}/deployments/${d.metadata.name}/status`, {
          status,
        }, "application/merge-patch+json");
      }
    }
  }

  async #schedule(pods: Obj[]): Promise<void> {
    for (const p of pods) {
      if (p.spec?.nodeName) continue;
      p.spec.nodeName = this.ctx.node;
      await this.#send("PATCH", `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`, {
        spec: { nodeName: this.ctx.node },
      }, "application/merge-patch+json");
    }
  }

  #freeIndex(): number {
    const used = new Set([...this.pods.values()].map((p) => p.index));
    for (let i = 3; i < 128; i++) if (!used.has(i)) return i;
    throw new Error("the lab node holds at most 125 pods (the lower half of the lab's /24)");
  }

  async #patchStatus(
    pod: { namespace: string; name: string },
    status: Record<string, unknown>,
  ): Promise<void> {
    await this.#send(
      "PATCH",
      `/api/v1/namespaces/${pod.namespace}/pods/${pod.name}/status`,
      { status },
      "application/merge-patch+json",
    );
  }

  async #kubelet(pods: Obj[]): Promise<void> {
    const mine = pods.filter((p) => p.spec?.nodeName === this.ctx.node && !p.metadata.deletionTimestamp);
    const uids = new Set(mine.map((p) => p.metadata.uid!));
    for (const uid of [...this.#waiting.keys(), ...this.#failed]) {
      if (uids.has(uid)) continue;
      this.#waiting.delete(uid);
      this.#failed.delete(uid);
    }
    for (const [uid, p] of this.pods) {
      if (uids.has(uid)) continue;
      this.pods.delete(uid);
      await removePod(p, this.ctx);
      this.log(`pod ${p.namespace}/${p.name}: removed`);
    }
    for (const pod of mine) {
      const uid = pod.metadata.uid!;
      const running = this.pods.get(uid);
      if (running) await this.#probe(running, pod);
      else if (!this.#failed.has(uid) && !this.#starting.has(uid)) await this.#start(pod);
    }
  }

  async #start(pod: Obj): Promise<void> {
    const uid = pod.metadata.uid!;
    const ref = { namespace: pod.metadata.namespace!, name: pod.metadata.name };
    const runs = plannedRuns(pod, this.ctx);
    const statuses = (list: Obj[] | undefined, rs: typeof runs.main) =>
      (list ?? []).map((c, i) => ({
        name: c.metadata?.name ?? (c as unknown as { name: string }).name,
        image: (c as unknown as { image: string }).image,
        ready: false,
        restartCount: 0,
        state: rs[i].kind === "refused"
          ? { waiting: { reason: "ErrImagePull", message: (rs[i] as { message: string }).message } }
          : { waiting: { reason: "ContainerCreating" } },
      }));
    const refused = [...runs.init, ...runs.main].find((r) => r.kind === "refused");
    if (refused) {
      this.#failed.add(uid);
      this.log(`pod ${ref.namespace}/${ref.name}: ${(refused as { message: string }).message}`);
      await this.#patchStatus(ref, {
        phase: "Pending",
        containerStatuses: statuses(pod.spec?.containers, runs.main),
        initContainerStatuses: statuses(pod.spec?.initContainers, runs.init),
        conditions: [{ type: "Ready", status: "False", reason: "ContainersNotReady" }],
      });
      return;
    }
    const index = this.#freeIndex();
    const p: RunningPod = {
      uid,
      ...ref,
      netns: `${this.ctx.lab}_${ref.namespace}_${ref.name}`,
      ip: `${this.ctx.prefix}.${index}`,
      index,
      sidecar: hasSidecar(pod),
      labels: pod.metadata.labels ?? {},
      serviceAccount: pod.spec?.serviceAccountName ?? "default",
      ready: false,
      readinessCheck: "",
      periodMs: probePeriodMs(pod.spec?.containers ?? []),
      checkedAt: 0,
      restarters: new Map(),
      tokens: [],
      restarts: new Map(),
      pids: new Map(),
      ports: (pod.spec?.containers ?? []).flatMap((
        c: { name: string; ports?: { containerPort: number }[] },
      ) => c.name === "mesh-proxy" ? [] : (c.ports ?? []).map((x) => x.containerPort)),
    };
    this.#starting.add(uid);
    try {
      p.readinessCheck = readinessCheck(pod.spec?.containers ?? [], p.ip, p.sidecar);
      this.pods.set(uid, p);
      await createPodNetwork(
        p,
        this.ctx,
        podHostsFile(p, { host: MESHD_HOST, ip: this.meshdIp }, this.#routes),
      );
      this.#hosts = "";
      this.#dnat = "";
      await this.#patchStatus(ref, {
        phase: "Pending",
        hostIP: this.meshdIp,
        podIP: p.ip,
        podIPs: [{ ip: p.ip }],
        startTime: new Date().toISOString(),
        containerStatuses: statuses(pod.spec?.containers, runs.main),
      });
      await startPod(p, this.ctx, pod, runs);
      this.log(`pod ${ref.namespace}/${ref.name}: started at ${p.ip}${p.sidecar ? " with its sidecar" : ""}`);
    } catch (e) {
      if (e instanceof VolumeNotReady) {
        // Tried again at the next pass, from scratch; said once per distinct reason.
        this.pods.delete(uid);
        await removePod(p, this.ctx);
        if (this.#waiting.get(uid) === e.message) return;
        this.#waiting.set(uid, e.message);
        this.log(`pod ${ref.namespace}/${ref.name}: waiting: ${e.message}`);
        await this.#patchStatus(ref, {
          phase: "Pending",
          containerStatuses: (pod.spec?.containers ?? []).map((c: { name: string; image: string }) => ({
            name: c.name,
            image: c.image,
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: "ContainerCreating", message: e.message } },
          })),
        });
        return;
      }
      this.log(`pod ${ref.namespace}/${ref.name}: ${(e as Error).message}`);
      this.#failed.add(uid);
      await this.#patchStatus(ref, {
        phase: "Failed",
        reason: "LabNodeError",
        message: (e as Error).message,
        conditions: [{
          type: "Ready",
          status: "False",
          reason: "LabNodeError",
          message: (e as Error).message,
        }],
      });
    } finally {
      this.#starting.delete(uid);
    }
  }

  /**
   * Restarts the containers whose process ended (unless `restartPolicy: Never`), after a back-off of
   * 1 s doubling to 30 s per container (the kubelet's is 10 s to 5 min).
   *
   * @returns whether every container's process lives now
   */
  async #restart(p: RunningPod, pod: Obj): Promise<boolean> {
    const dead: string[] = [];
    for (const [name, pid] of p.pids) if (!(await isAlive(pid))) dead.push(name);
    if (dead.length === 0 || pod.spec?.restartPolicy === "Never") return dead.length === 0;
    for (const name of dead) {
      const r = p.restarts.get(name) ?? { count: 0, notBefore: 0 };
      if (Date.now() < r.notBefore) continue;
      p.pids.set(name, await p.restarters.get(name)!());
      p.restarts.set(name, {
        count: r.count + 1,
        notBefore: Date.now() + Math.min(30_000, 1000 * 2 ** r.count),
      });
      this.log(`pod ${p.namespace}/${p.name}: container ${name} exited; restarted (${r.count + 1})`);
    }
    return false;
  }

  /** Ready when every process lives and the readiness check passes (probes.ts); checked again every probe period. */
  async #probe(p: RunningPod, pod: Obj): Promise<void> {
    for (const t of p.tokens) {
      if (Date.now() < t.refreshAt) continue;
      await refreshToken(this.ctx, pod, t).catch((e: Error) => {
        t.refreshAt = Date.now() + 10_000;
        this.log(`pod ${p.namespace}/${p.name}: ${e.message}; the old token stays, tried again in 10 s`);
      });
    }
    const alive = await this.#restart(p, pod);
    const failed = !alive && pod.spec?.restartPolicy === "Never";
    let ready = alive && podReady(pod);
    if (alive && (!podReady(pod) || Date.now() - p.checkedAt >= p.periodMs)) {
      p.checkedAt = Date.now();
      ready = (await run("ip", ["netns", "exec", p.netns, "bash", "-c", p.readinessCheck])).code === 0;
    }
    p.ready = ready;
    const restarts = [...p.restarts.values()].reduce((n, r) => n + r.count, 0);
    const reported = (pod.status?.containerStatuses ?? []).reduce(
      (n: number, c: { restartCount?: number }) => n + (c.restartCount ?? 0),
      0,
    );
    const phase = failed ? "Failed" : "Running";
    if (ready === podReady(pod) && pod.status?.phase === phase && restarts === reported) return;
    const now = new Date().toISOString();
    await this.#patchStatus(p, {
      phase,
      conditions: [
        { type: "Initialized", status: "True", lastTransitionTime: now },
        { type: "ContainersReady", status: ready ? "True" : "False", lastTransitionTime: now },
        { type: "Ready", status: ready ? "True" : "False", lastTransitionTime: now },
        { type: "PodScheduled", status: "True", lastTransitionTime: now },
      ],
      containerStatuses: (pod.spec?.containers ?? []).map((c: { name: string; image: string }) => ({
        name: c.name,
        image: c.image,
        ready,
        restartCount: p.restarts.get(c.name)?.count ?? 0,
        started: true,
        state: p.pids.has(c.name)
          ? { running: { startedAt: now } }
          : { terminated: { exitCode: 0, reason: "Completed" } },
      })),
    });
    if (ready !== podReady(pod)) this.log(`pod ${p.namespace}/${p.name}: ready ${ready}`);
  }

  async #endpointSlices(services: Obj[], pods: Obj[]): Promise<void> {
    const slices = await this.#list(
      `/apis/discovery.k8s.io/v1/endpointslices?labelSelector=endpointslice.kubernetes.io%2Fmanaged-by%3D${MANAGED_BY}`,
    );
    const wanted = new Set<string>();
    for (const s of services) {
      const slice = endpointSliceFor(s, pods);
      if (!slice) continue;
      const ns = s.metadata.namespace;
      wanted.add(`${ns}/${slice.metadata.name}`);
      const have = slices.find((x) => x.metadata.namespace === ns && x.metadata.name === slice.metadata.name);
      const strip = (o: Obj) =>
        JSON.stringify({
          e: (o as unknown as { endpoints: unknown }).endpoints ?? [],
          p: (o as unknown as { ports: unknown }).ports ?? [],
        });
      if (!have) await this.#send("POST", `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, slice);
      else if (strip(have) !== strip(slice)) {
        await this.#send(
          "PUT",
          `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/${slice.metadata.name}`,
          slice,
        );
      }
    }
    for (const x of slices) {
      if (!wanted.has(`${x.metadata.namespace}/${x.metadata.name}`)) {
        await this.#send(
          "DELETE",
          `/apis/discovery.k8s.io/v1/namespaces/${x.metadata.namespace}/endpointslices/${x.metadata.name}`,
          undefined,
        );
      }
    }
  }

  /** Rewrites every pod's hosts file and, in pods without a sidecar, the DNAT chain, when the Services changed. */
  async #network(): Promise<void> {
    const dnat = JSON.stringify(dnatRules(this.#routes));
    const hosts = JSON.stringify(this.#routes.map((r) => [r.name, r.namespace, r.clusterIP]));
    if (dnat === this.#dnat && hosts === this.#hosts) return;
    // meshd's namespace, where the agent runs, too: meshd fetches jwksUri from Services of the lab.
    const meshd = {
      uid: "",
      netns: this.meshdNetns,
      name: "meshd",
      namespace: "mesh-system",
      ip: this.meshdIp,
      sidecar: false,
    };
    for (const p of [meshd, ...this.pods.values()]) {
      if (this.#starting.has(p.uid)) continue;
      await Deno.writeTextFile(
        `/etc/netns/${p.netns}/hosts`,
        podHostsFile(p, { host: MESHD_HOST, ip: this.meshdIp }, this.#routes),
      );
      if (p.sidecar) continue;
      await run("ip", ["netns", "exec", p.netns, "iptables", "-w", "-t", "nat", "-F", SERVICES_CHAIN]);
      for (const rule of dnatRules(this.#routes)) {
        await run("ip", ["netns", "exec", p.netns, "iptables", ...rule]);
      }
    }
    this.#dnat = dnat;
    this.#hosts = hosts;
  }
}
