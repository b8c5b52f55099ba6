/**
 * `meshd discovery --kubeconfig <file>` as a real process, with a Service, its EndpointSlice and a Pod
 * applied only with kubectl to the test API server: a delta ADS client gets the service and its
 * endpoint with the pod's SPIFFE identity and the --clusterID label.
 *
 * @module
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { discovery } from "../../../meshd/cli_test_support.ts";
import { TYPE_URLS } from "../../../meshd/xds/generators.ts";
import { adsProtocol } from "../../../shared/internal/xds/envoy_protos.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { Proxy, STRICT } from "../../../meshd/server/test_support.ts";
import { cluster, kubectl } from "./kube_support.ts";
import { applyHttpbin } from "./kube_registry_support.ts";

Deno.test(requires(commandMissing("kubectl"), {
  name:
    "meshd discovery --kubeconfig serves a Service applied with kubectl to an ADS client, with its endpoint",
  async fn() {
    const api = await cluster();
    const kc = api.kubeconfig;
    try {
      await applyHttpbin(kc);
      await kubectl(kc, ["apply", "-f", "-"], STRICT);
      let service: Record<string, unknown> | undefined;
      let metrics = "";
      const monitoring = freePort();
      const args = ["--configDir", "", "--kubeconfig", kc, "--clusterID", "west"];
      const r = await discovery([...args, "--monitoringAddr", `127.0.0.1:${monitoring}`], {
        whileReady: async (out) => {
          const scrape = await within(fetch(`http://127.0.0.1:${monitoring}/metrics`), 5000, "/metrics");
          metrics = await scrape.text();
          const port = /ADS listening on \S+ \(port (\d+)\)/.exec(out)?.[1];
          assert.ok(port, out);
          const client = new (adsProtocol().client)(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
          try {
            const proxy = new Proxy(client, { id: "sidecar~10.1.0.9~sleep-1.foo~foo.svc.cluster.local" }, [
              TYPE_URLS.service,
            ]);
            await proxy.until(
              () => proxy.decoded(TYPE_URLS.service, "service", "foo/httpbin") !== undefined,
              10_000,
            );
            service = proxy.decoded(TYPE_URLS.service, "service", "foo/httpbin");
            proxy.call.end();
          } finally {
            client.close();
          }
        },
      });
      assert.equal(r.code, 0, r.err);
      assert.doesNotMatch(r.err, /clusterID has no effect/);
      assert.ok(service, r.out + r.err);
      assert.deepEqual(service.hosts, ["httpbin.foo.svc.cluster.local"]);
      // deno-lint-ignore no-explicit-any
      const [endpoint] = service.endpoints as any[];
      assert.equal(endpoint.address, "10.1.0.5");
      assert.equal(endpoint.identity, "spiffe://cluster.local/ns/foo/sa/httpbin");
      assert.equal(endpoint.proxied, true);
      assert.equal(endpoint.labels["topology.istio.io/cluster"], "west");
      // The informers' events, by kind and event: the registry's and the config's.
      assert.match(metrics, /^disco_orch_reg_events\{type="Service",event="add"\} 1$/m);
      assert.match(metrics, /^disco_orch_reg_events\{type="Pod",event="add"\} 1$/m);
      assert.match(metrics, /^disco_orch_cfg_events\{type="PeerAuthentication",event="add"\} 1$/m);
      assert.match(metrics, /^endpoint_no_pod 0$/m);
    } finally {
      await api.stop();
    }
  },
}));
