/**
 * What meshd writes to the Kubernetes API, by real `meshd discovery --kubeconfig` replicas against the
 * test API server (deploy/lab/kube_api), checked with kubectl: the elected leader patches the mesh
 * root into both webhook configurations (again after an edit removed it and after a root rotation) and
 * writes `status.validationMessages` on an invalid AuthorizationPolicy (cleared once it is fixed); the
 * other replica writes nothing until the leader stops and releases the Lease, then takes over at once.
 * With ENABLE_LEADER_ELECTION=false every replica acts.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { cluster, kubectl } from "./kube_support.ts";
import { type MeshdProcess, startMeshd, until } from "./meshd_process.ts";

/** Both configurations; their rules match nothing the test applies, so kubectl writes go straight in. */
const WEBHOOK_CONFIGS = [
  "MutatingWebhookConfiguration mesh-sidecar-injector",
  "ValidatingWebhookConfiguration mesh-mesh-system",
]
  .map((s) => {
    const [kind, name] = s.split(" ");
    return `apiVersion: admissionregistration.k8s.io/v1
kind: ${kind}
metadata: {name: ${name}}
webhooks:
  - name: a.${name}.mesh.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    clientConfig: {url: "https://127.0.0.1:9/x"}
    rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]
`;
  }).join("---\n");

const policy = (action: string) =>
  `apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: {name: bad, namespace: foo}
spec: {action: ${action}, rules: [{}]}
`;

/** Rotates the self-signed root every ~2 s (it is due once 1% of its 3 min are gone). */
const ROTATING_ROOT = {
  CA_SELF_SIGNED_CA_CERT_TTL: "3m",
  CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: "1s",
  CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: "99",
  DEFAULT_WORKLOAD_CERT_TTL: "60s",
};

/** The PEM bundles in each webhook of a configuration, as `kubectl get -o yaml` shows them. */
async function caBundles(kubeconfig: string, kind: string, name: string): Promise<string[]> {
  const yaml = await kubectl(kubeconfig, ["get", kind, name, "-o", "yaml"]);
  return [...yaml.matchAll(/caBundle: (\S+)/g)].map((m) => Buffer.from(m[1], "base64").toString());
}

const leader = async (p: MeshdProcess) => JSON.parse(await p.debug("/debug/leader"));

Deno.test(requires(commandMissing("kubectl"), {
  name:
    "meshd replicas: the leader patches caBundle and writes validation status; the other writes nothing, then takes over",
  async fn() {
    const api = await cluster();
    const ps: MeshdProcess[] = [];
    const k = (args: string[], stdin?: string) => kubectl(api.kubeconfig, args, stdin);
    try {
      await k(["apply", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: mesh-system}\n");
      await k(["apply", "-f", "-"], WEBHOOK_CONFIGS);
      await k(["apply", "-f", "-"], policy("MAYBE"));
      const a = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-a", ...ROTATING_ROOT });
      ps.push(a);
      await a.waitFor(/meshd-a is now the leader \(lease mesh-system\/meshd-leader\)/, 10_000);
      const b = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-b" });
      ps.push(b);
      assert.deepEqual(
        { ...(await leader(b)), holder: (await leader(b)).holder },
        {
          lease: "mesh-system/meshd-leader",
          identity: "meshd-b",
          leading: false,
          holder: "meshd-a",
          electionEnabled: true,
        },
      );
      assert.match(
        await k(["get", "lease", "meshd-leader", "-n", "mesh-system", "-o", "yaml"]),
        /holderIdentity: meshd-a/,
      );

      // caBundle: both configurations hold the leader's root, which then rotates.
      const rootOf = async () => await a.debug("/debug/rootCert");
      for (
        const [kind, name] of [["mutatingwebhookconfiguration", "mesh-sidecar-injector"], [
          "validatingwebhookconfiguration",
          "mesh-mesh-system",
        ]]
      ) {
        await until(
          async () => {
            const bundles = await caBundles(api.kubeconfig, kind, name);
            return bundles.length === 1 && bundles[0].includes("BEGIN CERTIFICATE") &&
              (await rootOf()).startsWith(bundles[0].split("-----END CERTIFICATE-----")[0]);
          },
          10_000,
          `${kind} ${name} got no caBundle`,
          ps,
        );
      }
      await until(
        async () => {
          const [bundle] = await caBundles(
            api.kubeconfig,
            "mutatingwebhookconfiguration",
            "mesh-sidecar-injector",
          );
          return (bundle?.match(/BEGIN CERTIFICATE/g) ?? []).length >= 2;
        },
        15_000,
        "the caBundle did not follow the root rotation (new root and old)",
        ps,
      );
      // Someone edits it away: the leader puts it back (it watches the configuration).
      const patched = await k([
        "patch",
        "validatingwebhookconfiguration",
        "mesh-mesh-system",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/webhooks/0/clientConfig/caBundle"}]',
        "-o",
        "yaml",
      ]);
      assert.doesNotMatch(patched, /caBundle/, "the edit removed it");
      await until(
        async () =>
          (await caBundles(api.kubeconfig, "validatingwebhookconfiguration", "mesh-mesh-system")).length ===
            1,
        5_000,
        "the removed caBundle was not put back",
        ps,
      );
      assert.ok(await a.metric("webhook_patch_attempts_total") >= 3);

      // status.validationMessages on the invalid policy, naming the field, as the log line does.
      const statusOf = async () => await k(["get", "authorizationpolicy", "bad", "-n", "foo", "-o", "yaml"]);
      await until(
        async () => /validationMessages/.test(await statusOf()),
        10_000,
        "no validationMessages",
        ps,
      );
      const yaml = await statusOf();
      assert.match(yaml, /code: IST0106/);
      assert.match(yaml, /level: ERROR/);
      assert.match(yaml, /field: spec\.action/);
      const logged =
        /rejected: (kubernetes:authorizationpolicies\.security\.mesh\.io\/foo\/bad: [^\n]*spec\.action: [^\n]*MAYBE[^\n]*)/
          .exec(a.output());
      assert.ok(logged, a.output());
      const json = JSON.parse(await k(["get", "authorizationpolicy", "bad", "-n", "foo", "-o", "json"]));
      assert.deepEqual(json.status.validationMessages.map((m: { message: string }) => m.message), [
        logged[1],
      ]);
      // Its own write comes back through the watch: not written again, not validated, logged or counted again.
      await new Promise((r) => setTimeout(r, 1000));
      const count = (re: RegExp) => a.output().split("\n").filter((l) => re.test(l)).length;
      assert.equal(count(/foo\/bad: status\.validationMessages set/), 1, a.output());
      assert.equal(
        count(/rejected: kubernetes:authorizationpolicies\.security\.mesh\.io\/foo\/bad/),
        1,
        a.output(),
      );
      // Fixed: the messages go.
      await k(["apply", "-f", "-"], policy("DENY"));
      await until(
        async () => !/validationMessages/.test(await statusOf()),
        10_000,
        "the messages were not cleared",
        ps,
      );

      // The follower wrote nothing: no patch, no status.
      assert.equal(await b.metric("webhook_patch_attempts_total"), 0);
      assert.doesNotMatch(b.output(), /caBundle set|validationMessages (set|cleared)/);

      // A graceful stop releases the Lease: b leads at once (not after the 30 s lease) and writes.
      const stoppedAt = Date.now();
      assert.equal(await a.stop(), 0);
      assert.match(a.output(), /released lease mesh-system\/meshd-leader/);
      await b.waitFor(/meshd-b is now the leader/, 10_000);
      assert.ok(Date.now() - stoppedAt < 15_000, "b waited for the lease to expire");
      await k(["apply", "-f", "-"], policy("SOMETIMES"));
      await until(
        async () => /SOMETIMES/.test(await statusOf()),
        10_000,
        "the new leader wrote no status",
        ps,
      );
    } finally {
      for (const p of ps) await p.stop();
      await api.stop();
    }
  },
}));

Deno.test(requires(commandMissing("kubectl"), {
  name: "meshd replicas: with ENABLE_LEADER_ELECTION=false both act, and no Lease is made",
  async fn() {
    const api = await cluster();
    const ps: MeshdProcess[] = [];
    try {
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: mesh-system}\n",
      );
      for (const name of ["meshd-a", "meshd-b"]) {
        ps.push(await startMeshd(api.kubeconfig, { POD_NAME: name, ENABLE_LEADER_ELECTION: "false" }));
      }
      for (const p of ps) {
        assert.match(p.output(), /ENABLE_LEADER_ELECTION is false: meshd-[ab] acts as the leader/);
        assert.equal((await leader(p)).leading, true);
      }
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], policy("MAYBE"));
      await until(
        async () =>
          /validationMessages/.test(
            await kubectl(api.kubeconfig, ["get", "authorizationpolicy", "bad", "-n", "foo", "-o", "yaml"]),
          ),
        10_000,
        "no status",
        ps,
      );
      await assert.rejects(
        kubectl(api.kubeconfig, ["get", "lease", "meshd-leader", "-n", "mesh-system"]),
        /NotFound|not found/,
      );
    } finally {
      for (const p of ps) await p.stop();
      await api.stop();
    }
  },
}));

Deno.test(requires(commandMissing("kubectl"), {
  name: "meshd replicas: a killed leader (no release) is replaced once its 30 s lease expired, not before",
  async fn() {
    const api = await cluster();
    const ps: MeshdProcess[] = [];
    try {
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: mesh-system}\n",
      );
      const a = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-a" });
      ps.push(a);
      await a.waitFor(/meshd-a is now the leader/, 10_000);
      const b = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-b" });
      ps.push(b);
      // b has seen a renew (every 5 s) before a dies.
      await new Promise((r) => setTimeout(r, 6000));
      assert.equal((await leader(b)).leading, false);
      await a.stop("SIGKILL");
      const killedAt = Date.now();
      await b.waitFor(/meshd-b is now the leader/, 50_000);
      const waited = Date.now() - killedAt;
      // a's last renewal was at most 5 s before the kill; b takes over within a retry period of the expiry.
      assert.ok(
        waited >= 30_000 - 5_000 - 1_000,
        `b led ${waited} ms after the kill: before the lease expired`,
      );
      assert.ok(waited <= 30_000 + 2 * 5_000 + 2_000, `b led only ${waited} ms after the kill`);
      assert.match(
        await kubectl(api.kubeconfig, ["get", "lease", "meshd-leader", "-n", "mesh-system", "-o", "yaml"]),
        /holderIdentity: meshd-b[\s\S]*leaseTransitions: 1/,
      );
    } finally {
      for (const p of ps) await p.stop();
      await api.stop();
    }
  },
}));
