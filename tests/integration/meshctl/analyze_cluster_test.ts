import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { kubectlMissing, startTestCluster } from "./cluster_support.ts";

const OBJECTS = `apiVersion: v1
kind: Namespace
metadata: {name: foo, labels: {mesh-injection: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: bar, annotations: {sidecar.istio.io/injekt: "true"}}
---
apiVersion: v1
kind: Pod
metadata: {name: httpbin, namespace: foo, labels: {app: httpbin}}
spec:
  containers: [{name: httpbin, image: docker.io/kong/httpbin:0.1.0, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: httpbin, namespace: foo, annotations: {sidecar.istio.io/inject: "false"}}
spec:
  selector: {app: httpbin}
  ports: [{name: web, port: 8000, targetPort: http}]
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  mtls: {mode: STRICT}
  portLevelMtls: {"9090": {mode: DISABLE}}
---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: {name: bad, namespace: bar}
spec: {mtls: {mode: STRICTT}}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: foo}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
`;

/** What the objects above must produce, as `origin code` (the test server's own namespace default too). */
const EXPECTED = [
  "Gateway foo/gw IST0101",
  "Namespace bar IST0102",
  "Namespace bar IST0108",
  "Namespace default IST0102",
  "PeerAuthentication bar/bad IST0106",
  "PeerAuthentication foo/httpbin MESH0001",
  "Pod foo/httpbin IST0103",
  "Service foo/httpbin IST0107",
  "Service foo/httpbin IST0118",
];

Deno.test(requires(kubectlMissing(), {
  name: "analyze -c: a live cluster's namespaces, pods, services and mesh kinds, in every output format",
  async fn() {
    const cluster = await startTestCluster();
    try {
      await cluster.apply(OBJECTS);
      const log = await cluster.meshctl(["analyze"]);
      assert.equal(log.code, 79, log.err); // IST0101 and IST0106 are errors
      const lines = log.out.trim().split("\n");
      const got = lines.map((l) => {
        const m = l.match(/^\w+ \[(\w+)\] \(([^)]*)\)/);
        return m ? `${m[2]} ${m[1]}` : l;
      }).sort();
      assert.deepEqual(got, EXPECTED);
      assert.ok(
        lines.includes(
          "Warning [IST0103] (Pod foo/httpbin) The pod httpbin.foo is missing the mesh proxy. This can often be " +
            "resolved by restarting or redeploying the workload.",
        ),
        log.out,
      );
      assert.ok(
        lines.includes(
          "Info [IST0118] (Service foo/httpbin) Port name web (port: 8000, targetPort: http) doesn't follow the " +
            "naming convention of Istio port.",
        ),
        log.out,
      );
      assert.match(
        log.out,
        /Error \[IST0106\] \(PeerAuthentication bar\/bad\) Schema validation error: spec\.mtls\.mode/,
      );

      for (const format of ["json", "yaml"]) {
        const r = await cluster.meshctl(["analyze", "-o", format]);
        assert.equal(r.code, 79, r.err);
        const records = (format === "json" ? JSON.parse(r.out) : parseYaml(r.out)) as Record<
          string,
          string
        >[];
        assert.deepEqual(records.map((m) => `${m.origin} ${m.code}`).sort(), EXPECTED, format);
        const ns = records.find((m) => m.code === "IST0102" && m.origin === "Namespace bar");
        assert.equal(ns?.level, "Info");
        assert.match(ns?.message ?? "", /kubectl label namespace bar mesh-injection=enabled/);
      }

      const scoped = await cluster.meshctl(["-n", "foo", "analyze", "--output-threshold", "Warning"]);
      assert.deepEqual(
        scoped.out.trim().split("\n").map((l) => l.split(" ").slice(0, 2).join(" ")).sort(),
        ["Error [IST0101]", "Warning [IST0103]", "Warning [IST0107]", "Warning [MESH0001]"],
        scoped.out,
      );

      // Fixing what was found clears it: the pod gets its proxy, the service port a protocol.
      await cluster.apply(`apiVersion: v1
kind: Service
metadata: {name: httpbin, namespace: foo}
spec:
  selector: {app: httpbin}
  ports: [{name: http, port: 8000, targetPort: http}]
`);
      const fixed = await cluster.meshctl(["-n", "foo", "analyze", "--analyzer", "service.PortNameAnalyzer"]);
      assert.equal(fixed.code, 0, fixed.err);
      assert.equal(fixed.out, "");
      assert.match(
        fixed.err,
        /No validation issues found when analyzing the Kubernetes API at https:\/\/127\.0\.0\.1:\d+ \(--orchconfig /,
      );
    } finally {
      await cluster.stop();
    }
  },
}));

Deno.test(requires(kubectlMissing(), {
  name: "analyze: a --context the kubeconfig lacks is an error naming it",
  async fn() {
    const cluster = await startTestCluster();
    try {
      const bad = await cluster.meshctl(["--context", "nope", "analyze"]);
      assert.equal(bad.code, 1);
      assert.match(bad.err, /--context: context "nope" does not exist/);
    } finally {
      await cluster.stop();
    }
  },
}));
