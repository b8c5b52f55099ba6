/**
 * meshd's leader election (meshd/leader_election) against the test Kubernetes API server: electors
 * sharing one Lease through meshd's rate-limited API client, with short timings (lease 2 s, renew
 * deadline 1 s, retry 200 ms). One leads at a time; a leader that stops renewing is replaced only after
 * its lease expired; a released lease is taken at once; a leader cut off from the API stops leading
 * within the renew deadline.
 */
import assert from "node:assert/strict";
import { KubeConfig } from "@kubernetes/client-node";
import { type StartedKubeApi, startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { ApiClient } from "../../../meshd/kube_source/api_client.ts";
import { LeaderElector } from "../../../meshd/leader_election/mod.ts";
import { startLeaderControllers } from "../../../meshd/leader_election/controllers.ts";
import { testLogger } from "../../../meshd/logging/test_support.ts";
import { kubeconfigVia, kubectl, startRelay } from "./kube_support.ts";

const TIMINGS = { leaseDurationMs: 2000, renewDeadlineMs: 1000, retryPeriodMs: 200 };

interface Candidate {
  elector: LeaderElector;
  api: ApiClient;
  lines: string[];
  /** performance.now() of each change of leading. */
  changes: { leading: boolean; at: number }[];
}

function candidate(kubeconfig: string, identity: string): Candidate {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  const api = new ApiClient(config);
  const lines: string[] = [];
  const elector = new LeaderElector({
    api,
    namespace: "mesh-system",
    identity,
    ...TIMINGS,
    log: { info: (m) => lines.push(m), warn: (m) => lines.push(m) },
  });
  const changes: Candidate["changes"] = [];
  elector.onChange((leading) => changes.push({ leading, at: performance.now() }));
  return { elector, api, lines, changes };
}

async function until(cond: () => boolean, ms: number, what: string, c: Candidate[]): Promise<number> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > ms) {
      throw new Error(`${what} within ${ms} ms; logs: ${c.flatMap((x) => x.lines).join(" | ")}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return performance.now() - start;
}

async function withCluster(fn: (api: StartedKubeApi, made: Candidate[]) => Promise<void>): Promise<void> {
  const api = await startKubeApi();
  const made: Candidate[] = [];
  try {
    await kubectl(
      api.kubeconfig,
      ["apply", "-f", "-"],
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: mesh-system}\n",
    );
    await fn(api, made);
  } finally {
    for (const c of made) {
      await c.elector.stop();
      await c.api.close();
    }
    await api.stop();
  }
}

async function holder(kubeconfig: string): Promise<string> {
  const yaml = await kubectl(kubeconfig, ["get", "lease", "meshd-leader", "-n", "mesh-system", "-o", "yaml"]);
  return /holderIdentity: (\S*)/.exec(yaml)?.[1] ?? "";
}

/** Samples the electors until `ms` passed; fails if two ever lead at once. */
async function neverTwo(cs: Candidate[], ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    assert.ok(cs.filter((c) => c.elector.leading).length <= 1, "two leaders at once");
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("leader election: one of two leads; the other takes over only after the stopped leader's lease expired", async () => {
  await withCluster(async (api, made) => {
    const a = candidate(api.kubeconfig, "meshd-a"), b = candidate(api.kubeconfig, "meshd-b");
    made.push(a, b);
    a.elector.start();
    await until(() => a.elector.leading, 3000, "a did not lead", made);
    b.elector.start();
    await neverTwo([a, b], 1500);
    assert.equal(b.elector.leading, false);
    assert.equal(await holder(api.kubeconfig), "meshd-a");
    assert.deepEqual(b.elector.status().holder, "meshd-a");
    assert.match(a.lines.join("\n"), /meshd-a is now the leader \(lease mesh-system\/meshd-leader\)/);

    // As a killed process: no more renewals, no release.
    await a.elector.stop({ release: false });
    const stoppedAt = performance.now();
    await until(() => b.elector.leading, TIMINGS.leaseDurationMs + 2000, "b did not take over", made);
    const waited = b.changes[0].at - stoppedAt;
    assert.ok(
      waited >= TIMINGS.leaseDurationMs - 2 * TIMINGS.retryPeriodMs,
      `b took over after ${waited.toFixed(0)} ms, before the lease (${TIMINGS.leaseDurationMs} ms) expired`,
    );
    assert.equal(await holder(api.kubeconfig), "meshd-b");
    const yaml = await kubectl(api.kubeconfig, [
      "get",
      "lease",
      "meshd-leader",
      "-n",
      "mesh-system",
      "-o",
      "yaml",
    ]);
    assert.match(yaml, /leaseTransitions: 1\b/);
  });
});

Deno.test("leader election: a graceful stop releases the lease and the other takes over at once", async () => {
  await withCluster(async (api, made) => {
    const a = candidate(api.kubeconfig, "meshd-a"), b = candidate(api.kubeconfig, "meshd-b");
    made.push(a, b);
    a.elector.start();
    await until(() => a.elector.leading, 3000, "a did not lead", made);
    b.elector.start();
    await neverTwo([a, b], 500);
    await a.elector.stop({ release: true });
    assert.match(
      a.lines.join("\n"),
      /meshd-a stopped leading[^\n]*\n[^\n]*released lease mesh-system\/meshd-leader/,
    );
    const waited = await until(() => b.elector.leading, 3000, "b did not take over", made);
    assert.ok(
      waited < TIMINGS.leaseDurationMs / 2,
      `b took over after ${waited.toFixed(0)} ms: the release was not used`,
    );
  });
});

Deno.test("leader election: of candidates starting together exactly one leads (409 on the losing write)", async () => {
  await withCluster(async (api, made) => {
    const cs = ["a", "b", "c"].map((n) => candidate(api.kubeconfig, `meshd-${n}`));
    made.push(...cs);
    for (const c of cs) c.elector.start();
    await until(() => cs.some((c) => c.elector.leading), 3000, "nobody led", made);
    await neverTwo(cs, 1500);
    const leader = cs.find((c) => c.elector.leading)!;
    assert.equal(await holder(api.kubeconfig), leader.elector.status().identity);
  });
});

Deno.test("leader election: a leader cut off from the API stops leading within the renew deadline", async () => {
  await withCluster(async (api, made) => {
    const relay = startRelay(Number(new URL(api.url).port));
    let closed = false;
    try {
      const a = candidate(await kubeconfigVia(api.kubeconfig, relay.port), "meshd-a");
      made.push(a);
      a.elector.start();
      await until(() => a.elector.leading, 3000, "a did not lead", made);
      await relay.close();
      closed = true;
      const cutAt = performance.now();
      await until(() => !a.elector.leading, TIMINGS.renewDeadlineMs + 500, "a still leads", made);
      const led = a.changes.at(-1)!.at - cutAt;
      assert.ok(led <= TIMINGS.renewDeadlineMs + 100, `a led ${led.toFixed(0)} ms without the API`);
      assert.match(a.lines.join("\n"), /stopped leading [^\n]*within the renew deadline/);
    } finally {
      if (!closed) await relay.close();
    }
  });
});

Deno.test("leader controllers: tasks run only while leading, stop the moment the lease is lost, and /debug/leader says so", async () => {
  await withCluster(async (api) => {
    const relay = startRelay(Number(new URL(api.url).port));
    const config = new KubeConfig();
    config.loadFromFile(await kubeconfigVia(api.kubeconfig, relay.port));
    const client = new ApiClient(config);
    const lines: string[] = [];
    const logger = testLogger((l) => lines.push(l));
    const events: string[] = [];
    const controllers = startLeaderControllers({
      api: client,
      electionEnabled: true,
      namespace: "mesh-system",
      identity: "meshd-a",
      tasks: [{ name: "t", start: () => (events.push("start"), () => events.push("stop")) }],
      logger,
      timings: TIMINGS,
    });
    let closed = false;
    try {
      const status = async () =>
        await (await controllers.debugHandlers["/debug/leader"](
          new Request("http://x/debug/leader"),
          "127.0.0.1",
        ))
          .json();
      const wait = async (cond: () => boolean, ms: number, what: string) => {
        const end = Date.now() + ms;
        while (!cond()) {
          if (Date.now() > end) throw new Error(`${what}; log: ${lines.join(" | ")}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await wait(() => events.length === 1, 3000, "the task did not start");
      assert.deepEqual(await status(), {
        lease: "mesh-system/meshd-leader",
        identity: "meshd-a",
        leading: true,
        holder: "meshd-a",
        electionEnabled: true,
      });
      await relay.close();
      closed = true;
      await wait(() => events.length === 2, TIMINGS.renewDeadlineMs + 500, "the task was not stopped");
      assert.deepEqual(events, ["start", "stop"]);
      assert.equal((await status()).leading, false);
    } finally {
      await controllers.stop();
      await client.close();
      if (!closed) await relay.close();
    }
  });
});
