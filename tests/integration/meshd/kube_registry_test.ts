/**
 * meshd's Kubernetes service registry (meshd/kube_registry) against the test API server
 * (deploy/lab/kube_api), everything applied with kubectl: a Service, its EndpointSlice and Pods become
 * the push context's service, endpoints (with the pod's SPIFFE identity) and workloads, shown on
 * /debug/registryz; a label change, an endpoint turning not ready and a deleted pod update them; a pod
 * without an IP and an endpoint of an unknown pod are counted; a proxy that connects as the pod gets
 * the pod's Workload.
 *
 * @module
 */
import assert from "node:assert/strict";
import { loadKubeConfig } from "../../../meshd/kube_source/kube_config.ts";
import { ApiClient } from "../../../meshd/kube_source/api_client.ts";
import { KubeRegistry } from "../../../meshd/kube_registry/mod.ts";
import { registryMetricHooks } from "../../../meshd/kube_control.ts";
import { createMetrics } from "../../../meshd/monitoring/metrics.ts";
import { DiscoveryServer } from "../../../meshd/server/discovery_server.ts";
import { TYPE_URLS } from "../../../meshd/xds/generators.ts";
import { Proxy } from "../../../meshd/server/test_support.ts";
import { adsProtocol } from "../../../shared/internal/xds/envoy_protos.ts";
import { jsonToStruct } from "../../../shared/internal/xds/struct.ts";
import * as grpc from "@grpc/grpc-js";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { waitFor } from "../../../meshd/config_store/test_support.ts";
import { cluster, kubectl } from "./kube_support.ts";
import { applyHttpbin, pod, podRunning, slice } from "./kube_registry_support.ts";

/** The value of a metric in the Prometheus text, or undefined. */
async function metric(m: ReturnType<typeof createMetrics>, line: string): Promise<number | undefined> {
  const found = (await m.registry.metrics()).split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

Deno.test(requires(commandMissing("kubectl"), {
  name: "kube registry: Services, EndpointSlices and Pods applied with kubectl are served and follow changes",
  async fn() {
    const api = await cluster();
    const kc = api.kubeconfig;
    const metrics = createMetrics();
    const choice = loadKubeConfig(kc, {});
    if (!choice.ok) throw new Error(choice.reason);
    const client = new ApiClient(choice.config);
    // No CRD config in this test: the file source of an empty directory.
    const dir = await Deno.makeTempDir();
    const server = new DiscoveryServer({
      configDir: dir,
      registry: new KubeRegistry({
        config: choice.config,
        api: client,
        clusterID: "east",
        retryMs: 100,
        hooks: registryMetricHooks(metrics.orch),
      }),
      grpcAddr: "127.0.0.1:0",
      debounceAfterMs: 10,
      logger: { info() {}, warn() {}, error() {} },
    });
    let proxyClient: grpc.Client | undefined;
    try {
      // Before meshd starts: the first list carries them.
      await applyHttpbin(kc);
      const { grpcPort } = await server.start();
      const service = () => server.pushContext.services.find((s) => s.key === "foo/httpbin");
      const s = service()!;
      assert.ok(s, "the Service is in the first push context");
      assert.deepEqual(s.hosts, ["httpbin.foo.svc.cluster.local"]);
      assert.match(s.addresses[0], /^10\.96\./, "the clusterIP the API server allocated");
      assert.deepEqual(s.ports, [{ name: "http", number: 80, targetPort: 8080, protocol: "HTTP" }]);
      assert.equal(s.endpoints.length, 1);
      assert.equal(s.endpoints[0].address, "10.1.0.5");
      assert.deepEqual(
        s.endpoints[0].ports,
        { 80: 8080 },
        "the named targetPort through the pod's container port",
      );
      assert.equal(s.endpoints[0].identity, "spiffe://cluster.local/ns/foo/sa/httpbin");
      assert.equal(s.endpoints[0].labels["topology.istio.io/cluster"], "east");

      // The debug page shows the service, its endpoint, and the registry's own view.
      const page = JSON.parse(
        server.debugPages.render({ name: "registryz", query: new URLSearchParams() }).body,
      );
      assert.equal(page.registry.clusterID, "east");
      assert.ok(page.registry.serviceAccounts.includes("foo/httpbin"), JSON.stringify(page.registry));
      assert.equal(
        page.services.find((x: { key: string }) => x.key === "foo/httpbin").endpoints[0].address,
        "10.1.0.5",
      );
      assert.ok(page.workloads.some((w: { key: string }) => w.key === "foo/httpbin-1"));

      // A proxy that connects as the pod (Istio's node id) gets the pod's Workload: address, identity, inbound port.
      proxyClient = new (adsProtocol().client)(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
      const proxy = new Proxy(proxyClient, { id: "sidecar~10.1.0.5~httpbin-1.foo~foo.svc.cluster.local" }, [
        TYPE_URLS.workload,
        TYPE_URLS.service,
      ]);
      await proxy.until(
        () => proxy.decoded(TYPE_URLS.workload, "workload", "foo/httpbin-1") !== undefined,
        5000,
      );
      const w = proxy.decoded(TYPE_URLS.workload, "workload", "foo/httpbin-1")!;
      assert.deepEqual([w.serviceAccount, w.addresses, w.proxied], ["httpbin", ["10.1.0.5"], true]);
      assert.deepEqual(w.inboundMtls.map((m: { port: number }) => m.port), [8080]);
      await proxy.until(() => proxy.decoded(TYPE_URLS.service, "service", "foo/httpbin") !== undefined, 5000);
      assert.equal(
        proxy.decoded(TYPE_URLS.service, "service", "foo/httpbin")!.endpoints[0].identity,
        "spiffe://cluster.local/ns/foo/sa/httpbin",
      );
      // The same node id from another cluster (node metadata CLUSTER_ID) is not this cluster's pod.
      const other = new Proxy(
        proxyClient,
        {
          id: "sidecar~10.1.0.5~httpbin-1.foo~foo.svc.cluster.local",
          metadata: jsonToStruct({ CLUSTER_ID: "west" }),
        },
        [TYPE_URLS.service, TYPE_URLS.workload],
      );
      await other.until(() => other.held.has(TYPE_URLS.workload), 5000);
      assert.equal(other.held.get(TYPE_URLS.workload)!.size, 0, "no Workload for a proxy of cluster west");
      other.call.end();

      // A label change reaches the workload and the endpoint.
      await kubectl(kc, ["label", "pod", "httpbin-1", "-n", "foo", "version=v2"]);
      await waitFor(() => service()?.endpoints[0]?.labels.version === "v2", "the new label on the endpoint");
      assert.equal(server.pushContext.workloads.get("foo/httpbin-1")!.labels.version, "v2");

      // A second pod, ready; then the first endpoint turns not ready: only the second is served.
      await kubectl(kc, ["apply", "-f", "-"], pod("httpbin-2", "security.istio.io/tlsMode: istio"));
      await podRunning(kc, "httpbin-2", "10.1.0.6");
      await kubectl(
        kc,
        ["apply", "-f", "-"],
        slice([["10.1.0.5", "httpbin-1", false], ["10.1.0.6", "httpbin-2", true]]),
      );
      await waitFor(
        () => service()?.endpoints.map((e) => e.address).join() === "10.1.0.6",
        "only the ready endpoint",
      );

      // The pod deleted: its workload goes; its endpoint, still in the slice, waits for a pod.
      await kubectl(
        kc,
        ["apply", "-f", "-"],
        slice([["10.1.0.5", "httpbin-1", true], ["10.1.0.6", "httpbin-2", true]]),
      );
      await waitFor(() => service()?.endpoints.length === 2, "both endpoints ready");
      await kubectl(kc, ["delete", "pod", "httpbin-1", "-n", "foo", "--wait=false"]);
      await waitFor(
        () => !server.pushContext.workloads.has("foo/httpbin-1"),
        "the deleted pod's workload gone",
      );
      assert.deepEqual(
        service()!.endpoints.map((e) => e.address),
        ["10.1.0.6"],
        "no endpoint without its pod",
      );
      assert.equal(await metric(metrics, "endpoint_no_pod"), 1);
      assert.equal(await metric(metrics, "disco_orch_endpoints_pending_pod"), 1);
      assert.equal(await metric(metrics, "disco_orch_endpoints_with_no_pods"), 1);

      // A pod without an IP (never scheduled) counts in disco_no_ip.
      assert.equal(await metric(metrics, "disco_no_ip"), 0);
      await kubectl(kc, ["apply", "-f", "-"], pod("httpbin-3"));
      await waitFor(() => server.pushContext.registry?.podsWithoutIp === 1, "the pod without IP counted");
      assert.equal(await metric(metrics, "disco_no_ip"), 1);
      assert.ok(!server.pushContext.workloads.has("foo/httpbin-3"));
      assert.ok((await metric(metrics, 'disco_orch_reg_events{type="Pod",event="add"}'))! >= 3);
    } finally {
      proxyClient?.close();
      await server.stop(0);
      await client.close();
      await api.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
