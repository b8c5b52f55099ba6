import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { kubectlMissing, startTestCluster, type TestCluster } from "./cluster_support.ts";

const WEBHOOKS = new URL("../../../deploy/kubernetes/webhooks.yaml", import.meta.url).pathname;

const OBJECTS = `apiVersion: v1
kind: Namespace
metadata: {name: mesh-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: foo, labels: {mesh-injection: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: bar}
---
apiVersion: v1
kind: Pod
metadata: {name: httpbin, namespace: foo, labels: {app: httpbin}}
spec:
  containers:
    - {name: httpbin, image: docker.io/kong/httpbin:0.1.0, ports: [{name: http, containerPort: 8080}]}
    - {name: mesh-proxy, image: mesh/proxy:test, ports: [{name: http-envoy-prom, containerPort: 15090}]}
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: bar, labels: {app: plain}}
spec:
  containers: [{name: app, image: docker.io/kong/httpbin:0.1.0}]
---
apiVersion: v1
kind: Service
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {app: httpbin}
  ports: [{name: http, port: 8000, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: sleep, namespace: foo}
spec:
  selector: {matchLabels: {app: sleep}}
  template:
    metadata: {labels: {app: sleep, sidecar.mesh.io/inject: "false"}}
    spec: {containers: [{name: sleep, image: curlimages/curl}]}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: mesh-system}
spec: {mtls: {mode: STRICT}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  portLevelMtls: {"8080": {mode: PERMISSIVE}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-httpbin, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  rules: [{to: [{operation: {methods: [GET]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: elsewhere, namespace: bar}
spec: {action: DENY, rules: [{}]}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin]
  http: [{route: [{destination: {host: httpbin}}]}]
`;

/** The cluster with OBJECTS, then the injector webhooks (applied last: nothing serves them). */
async function withCluster(fn: (c: TestCluster) => Promise<void>): Promise<void> {
  const cluster = await startTestCluster();
  try {
    await cluster.apply(OBJECTS);
    await kubectlOk(cluster.api.kubeconfig, ["apply", "-f", WEBHOOKS]);
    await fn(cluster);
  } finally {
    await cluster.stop();
  }
}

async function ok(c: TestCluster, args: string[]): Promise<string> {
  const r = await c.meshctl(args);
  assert.equal(r.code, 0, `meshctl ${args.join(" ")}: ${r.err}`);
  return r.out;
}

Deno.test(requires(kubectlMissing(), {
  name: "x check-inject: pods, workload templates and labels against deploy/kubernetes/webhooks.yaml",
  async fn() {
    await withCluster(async (c) => {
      const injected = await ok(c, ["x", "check-inject", "httpbin.foo"]);
      assert.equal(
        injected,
        "WEBHOOK                 REVISION   INJECTED   REASON\n" +
          "mesh-sidecar-injector   default    \u2714          namespace.sidecar-injector.mesh.io: namespace label " +
          "mesh-injection=enabled\n",
      );
      const optedOut = await ok(c, ["-n", "foo", "x", "check-inject", "deployment/sleep"]);
      assert.match(
        optedOut,
        /mesh-sidecar-injector +default +\u2718 +no webhook selects namespace foo \(labels: mesh-injection=enabled\) with the pod \(labels: app=sleep, sidecar.mesh.io\/inject=false\)/,
      );
      assert.match(
        await ok(c, ["x", "check-inject", "plain.bar"]),
        /\u2718 +no webhook selects namespace bar/,
      );
      assert.match(
        await ok(c, ["-n", "foo", "x", "check-inject", "-l", "app=new"]),
        /\u2714 +namespace\.sidecar-injector/,
      );
      const missing = await c.meshctl(["x", "check-inject", "nope.foo"]);
      assert.equal(missing.code, 1);
      assert.match(missing.err, /pods\/nope: 404/);
      const badType = await c.meshctl(["x", "check-inject", "cronjob/x"]);
      assert.match(badType.err, /unsupported type "cronjob"/);
    });
  },
}));

Deno.test(requires(kubectlMissing(), {
  name: "x describe pod|service: services, per-port mTLS and the policy deciding it, authz, VirtualServices",
  async fn() {
    await withCluster(async (c) => {
      const pod = await ok(c, ["-n", "foo", "x", "describe", "pod", "httpbin"]);
      assert.equal(
        pod,
        "Pod: httpbin\n" +
          "   Pod Revision: default\n" +
          "   Pod Ports: 8080 (httpbin), 15090 (mesh-proxy)\n" +
          "--------------------\n" +
          "Service: httpbin\n" +
          "   Port: http 8000/HTTP targets pod port 8080\n" +
          "   VirtualService: httpbin.foo\n" +
          "--------------------\n" +
          "Effective PeerAuthentication:\n" +
          "   Port 8080: PERMISSIVE (port policy httpbin.foo)\n" +
          "   Port 15090: STRICT (mesh policy default.mesh-system)\n" +
          "Applied PeerAuthentication:\n" +
          "   default.mesh-system (mesh), httpbin.foo (workload)\n" +
          "Applied AuthorizationPolicy:\n" +
          "   allow-httpbin.foo (ALLOW, workload selector)\n" +
          "Applied RequestAuthentication:\n" +
          "   none\n",
      );
      assert.equal(
        await ok(c, ["x", "des", "po", "plain.bar"]),
        "Pod: plain\n   Pod Revision: default\n   Pod Ports: none\n" +
          "WARNING: plain.bar is not part of the mesh: no mesh-proxy container\n",
      );
      assert.doesNotMatch(await ok(c, ["x", "describe", "pod", "plain.bar", "--ignoreUnmeshed"]), /WARNING/);
      const svc = await ok(c, ["x", "describe", "svc", "httpbin.foo"]);
      assert.match(
        svc,
        /^Service: httpbin\n {3}Port: http 8000 targets http\n {3}VirtualService: httpbin.foo\n-+\nPod: httpbin\n/,
      );
      const none = await c.meshctl(["x", "describe", "pod", "nope.foo"]);
      assert.match(none.err, /pod nope not found in namespace foo/);
    });
  },
}));

Deno.test(requires(kubectlMissing(), {
  name: "x injector list: the injector's namespaces, and the proxies found per namespace",
  async fn() {
    await withCluster(async (c) => {
      assert.equal(
        await ok(c, ["x", "injector", "list"]),
        "NAMESPACES   INJECTOR-HOOK           MESH-REVISION\n" +
          "foo          mesh-sidecar-injector   default\n" +
          "\n" +
          "NAMESPACE   MESH-REVISION   POD-IMAGES\n" +
          "foo         default         mesh/proxy:test\n",
      );
    });
  },
}));

Deno.test(requires(kubectlMissing(), {
  name:
    "create-remote-secret: remote and config types, bearer token that the API accepts, plugin auth; remote-clusters lists it",
  async fn() {
    await withCluster(async (c) => {
      const kc = c.api.kubeconfig;
      const noAccount = await c.meshctl(["create-remote-secret", "--name", "c1"]);
      assert.equal(noAccount.code, 1);
      assert.match(noAccount.err, /service account mesh-system\/mesh-reader-service-account not found/);

      const yaml = await ok(c, ["create-remote-secret", "--name", "c1", "--create-service-account"]);
      assert.ok(yaml.startsWith("# This file is autogenerated, do not edit.\n"), yaml);
      const secret = parseYaml(yaml.split("---\n")[0]) as {
        metadata: {
          name: string;
          namespace: string;
          labels: Record<string, string>;
          annotations: Record<string, string>;
        };
        stringData: Record<string, string>;
      };
      assert.equal(secret.metadata.name, "mesh-remote-secret-c1");
      assert.equal(secret.metadata.namespace, "mesh-system");
      assert.deepEqual(secret.metadata.labels, { "istio/multiCluster": "true" });
      assert.deepEqual(secret.metadata.annotations, { "networking.istio.io/cluster": "c1" });
      // The kubeconfig inside reaches this API server with the service account's token.
      const file = join(c.api.dir, "remote.kubeconfig");
      await Deno.writeTextFile(file, secret.stringData.c1);
      assert.match(await kubectlOk(file, ["get", "namespace", "foo", "-o", "name"]), /namespace\/foo/);

      const named = parseYaml((await ok(c, ["create-remote-secret"])).split("---\n")[0]) as {
        stringData: Record<string, string>;
      };
      const uid = (await kubectlOk(kc, ["get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"]))
        .trim();
      assert.deepEqual(Object.keys(named.stringData), [uid]);

      const config = parseYaml(
        (await ok(c, [
          "create-remote-secret",
          "--name",
          "c2",
          "--type",
          "config",
          "--auth-type",
          "plugin",
          "--auth-plugin-name",
          "gcp",
          "--auth-plugin-config",
          "scopes=a,project=p",
        ])).split("---\n")[0],
      ) as { metadata: { name: string; labels: Record<string, string> }; stringData: Record<string, string> };
      assert.equal(config.metadata.name, "mesh-kubeconfig");
      assert.deepEqual(config.metadata.labels, { "istio/config": "true" });
      const inner = parseYaml(config.stringData.c2) as { users: { user: unknown }[] };
      assert.deepEqual(inner.users[0].user, {
        "auth-provider": { name: "gcp", config: { scopes: "a", project: "p" } },
      });

      const wrong = await c.meshctl(["create-remote-secret", "--auth-plugin-name", "gcp"]);
      assert.match(wrong.err, /need --auth-type=plugin/);

      await c.apply(yaml);
      assert.equal(
        await ok(c, ["remote-clusters"]),
        "NAME   SECRET                              STATUS\n" +
          "c1     mesh-system/mesh-remote-secret-c1   not connected (meshd reads no remote secrets)\n",
      );
    });
  },
}));
