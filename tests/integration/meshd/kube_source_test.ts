/**
 * meshd's Kubernetes config source (meshd/kube_source) against the test API server
 * (deploy/lab/kube_api): config made only with kubectl reaches meshd's store and push context, an
 * Istio-group alias included; an invalid object keeps its last good version and is counted; a delete
 * removes it; a watch broken until its resourceVersion is compacted re-lists (410 Gone) and loses no
 * update.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigStore } from "../../../meshd/config_store/mod.ts";
import { DiscoveryServer } from "../../../meshd/server/discovery_server.ts";
import type { ValidationIssue } from "../../../shared/mod.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { waitFor } from "../../../meshd/config_store/test_support.ts";
import { cluster, kubeconfigVia, kubectl, startRelay, testSource as source } from "./kube_support.ts";

function peerAuthentication(group: string, name: string, spec: string): string {
  return `apiVersion: ${group}/v1
kind: PeerAuthentication
metadata: {name: ${name}, namespace: foo}
spec: ${spec}
`;
}

const DENY_ALL = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-all, namespace: foo}
spec: {}
`;

Deno.test(requires(commandMissing("kubectl"), {
  name:
    "kube source: config applied with kubectl is served; an invalid edit keeps the last good; delete removes",
  async fn() {
    const api = await cluster();
    const logs: string[] = [];
    const rejected: ValidationIssue[] = [];
    // Before meshd starts: the first list must carry it.
    await kubectl(
      api.kubeconfig,
      ["apply", "-f", "-"],
      peerAuthentication("security.mesh.io", "default", "{mtls: {mode: STRICT}}"),
    );
    const server = new DiscoveryServer({
      configDir: "",
      configFeed: source(api.kubeconfig, logs),
      grpcAddr: "127.0.0.1:0",
      debounceAfterMs: 10,
      logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
      onRejected: (i) => rejected.push(i),
    });
    try {
      await server.start();
      const entry = () => server.store.snapshot().byKey["PeerAuthentication/foo/default"];
      assert.equal(entry()?.resource.apiVersion, "security.mesh.io/v1");

      // An Istio-group alias, applied while meshd watches: it reaches the push context.
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], DENY_ALL);
      await waitFor(
        () => server.pushContext.authorizationPolicies.some((p) => p.key === "foo/deny-all"),
        "the AuthorizationPolicy in the push context",
      );
      assert.equal(
        server.store.snapshot().byKey["AuthorizationPolicy/foo/deny-all"].resource.apiVersion,
        "security.istio.io/v1",
      );

      // Invalid (namespace-wide portLevelMtls): rejected with namespace/name and field, the last good kept.
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        peerAuthentication(
          "security.mesh.io",
          "default",
          `{mtls: {mode: PERMISSIVE}, portLevelMtls: {"8080": {mode: DISABLE}}}`,
        ),
      );
      await waitFor(() => rejected.length > 0, "the rejection");
      assert.equal(rejected[0].resource, "PeerAuthentication foo/default");
      assert.equal(rejected[0].field, "spec.portLevelMtls");
      assert.ok(
        logs.some((l) =>
          l.startsWith("rejected: kubernetes:peerauthentications.security.mesh.io/foo/default: ")
        ),
        logs.join("\n"),
      );
      const kept = entry();
      assert.ok(kept && kept.kind === "PeerAuthentication");
      if (kept.kind === "PeerAuthentication") assert.equal(kept.resource.spec.mtls?.mode, "STRICT");

      await kubectl(api.kubeconfig, [
        "delete",
        "peerauthentications.security.mesh.io",
        "default",
        "-n",
        "foo",
      ]);
      await waitFor(() => entry() === undefined, "the deleted PeerAuthentication gone");
      await kubectl(api.kubeconfig, [
        "delete",
        "authorizationpolicies.security.istio.io",
        "deny-all",
        "-n",
        "foo",
      ]);
      await waitFor(
        () => !server.pushContext.authorizationPolicies.some((p) => p.key === "foo/deny-all"),
        "the deleted AuthorizationPolicy out of the push context",
      );
    } finally {
      await server.stop(0);
      await api.stop();
    }
  },
}));

Deno.test(requires(commandMissing("kubectl"), {
  name: "kube source: a watch broken past the server's history re-lists on 410 Gone and loses no update",
  async fn() {
    const api = await cluster({ historySize: 3 });
    const relay = startRelay(Number(new URL(api.url).port));
    const logs: string[] = [];
    const gone: string[] = [];
    const store = new ConfigStore(source(await kubeconfigVia(api.kubeconfig, relay.port), logs, gone), {
      logger: { info: () => {}, warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    });
    try {
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        [
          peerAuthentication("security.mesh.io", "a", "{mtls: {mode: STRICT}}"),
          peerAuthentication("security.mesh.io", "b", "{mtls: {mode: STRICT}}"),
        ].join("---\n"),
      );
      await store.start();
      const mode = (name: string) => {
        const e = store.snapshot().byKey[`PeerAuthentication/foo/${name}`];
        return e?.kind === "PeerAuthentication" ? e.resource.spec.mtls?.mode : undefined;
      };
      assert.equal(mode("a"), "STRICT");

      // Cut every watch (the network, not the server), and hold the watches that reconnect until more
      // changes are made than the server keeps: their resourceVersion is then gone (410).
      const release = api.server.objects.store.hub.hold();
      relay.cut();
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        peerAuthentication("security.mesh.io", "a", "{mtls: {mode: PERMISSIVE}}"),
      );
      await kubectl(api.kubeconfig, ["delete", "peerauthentications.security.mesh.io", "b", "-n", "foo"]);
      for (let i = 0; i < 4; i++) {
        await kubectl(
          api.kubeconfig,
          ["apply", "-f", "-"],
          peerAuthentication("security.mesh.io", `c${i}`, "{mtls: {mode: STRICT}}"),
        );
      }
      release();

      await waitFor(
        () => mode("a") === "PERMISSIVE" && mode("b") === undefined && mode("c3") === "STRICT",
        "the re-list",
        {
          timeoutMs: 10_000,
        },
      );
      // The resumed watch of PeerAuthentications was refused as too old, so the informer listed again.
      assert.ok(gone.includes("PeerAuthentication"), logs.join("\n"));
    } finally {
      await store.stop();
      await relay.close();
      await api.stop();
    }
  },
}));

Deno.test(requires(commandMissing("kubectl") ?? commandMissing("openssl"), {
  name: "kube source: a TLS Secret is a gateway credential; a Secret without a credential is not config",
  async fn() {
    const api = await cluster();
    const dir = await Deno.makeTempDir();
    const logs: string[] = [];
    const rejected: ValidationIssue[] = [];
    const store = new ConfigStore(source(api.kubeconfig, logs), {
      onRejected: (i) => rejected.push(i),
      logger: { info: () => {}, warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    });
    try {
      const made = await new Deno.Command("openssl", {
        args: ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"]
          .concat(["-subj", "/CN=gw.example.com", "-keyout", `${dir}/tls.key`, "-out", `${dir}/tls.crt`]),
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.ok(made.success, new TextDecoder().decode(made.stderr));
      // `create --dry-run=client -o yaml | apply`: the test API server speaks JSON only, not the
      // protobuf that `kubectl create secret` sends.
      const dryRun = ["--dry-run=client", "-o", "yaml"];
      const tls = ["create", "secret", "tls", "gw-cred", "-n", "foo", "--cert", `${dir}/tls.crt`];
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        await kubectl(api.kubeconfig, [...tls, "--key", `${dir}/tls.key`, ...dryRun]),
      );
      const generic = ["create", "secret", "generic", "db", "-n", "foo", "--from-literal=password=x"];
      await kubectl(
        api.kubeconfig,
        ["apply", "-f", "-"],
        await kubectl(api.kubeconfig, [...generic, ...dryRun]),
      );
      await store.start();
      const secret = store.snapshot().byKey["Secret/foo/gw-cred"];
      assert.equal(secret?.kind, "Secret");
      assert.equal(store.snapshot().byKey["Secret/foo/db"], undefined);
      assert.deepEqual(rejected, [], logs.join("\n"));
    } finally {
      await store.stop();
      await api.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
