import assert from "node:assert/strict";
import { TYPE_URLS } from "../xds/generators.ts";
import { STRICT, withDiscovery } from "./test_support.ts";

Deno.test("a connected proxy gets its workload and the services; connecting makes it proxied", async () => {
  await withDiscovery(async ({ connect }) => {
    const sleep = connect("foo", "sleep-1");
    await sleep.until(() => sleep.held.get(TYPE_URLS.service)?.has("foo/httpbin") ?? false, 3000);
    assert.deepEqual(sleep.decoded(TYPE_URLS.service, "service", "foo/httpbin")!.endpoints[0].proxied, false);
    const httpbin = connect("foo", "httpbin-1");
    await httpbin.until(() => httpbin.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1") ?? false, 3000);
    // httpbin's proxy is connected, so sleep is told to use mutual TLS towards it, with its identity.
    await sleep.until(
      () => sleep.decoded(TYPE_URLS.service, "service", "foo/httpbin")?.endpoints[0].proxied,
      3000,
    );
    assert.equal(
      sleep.decoded(TYPE_URLS.service, "service", "foo/httpbin")!.endpoints[0].identity,
      "spiffe://cluster.local/ns/foo/sa/httpbin",
    );
  });
});

Deno.test("a config change reaches a connected proxy within the debounce time plus 1 s", async () => {
  await withDiscovery(async ({ dir, connect }) => {
    const p = connect("foo", "httpbin-1");
    const mode = () => p.decoded(TYPE_URLS.workload, "workload", "foo/httpbin-1")?.defaultMtls?.mode;
    await p.until(() => mode() === "PERMISSIVE", 3000);
    await Deno.writeTextFile(`${dir}/strict.yaml`, STRICT);
    const took = await p.until(() => mode() === "STRICT", 100 + 1000 + 200);
    assert.ok(took < 1300, `took ${took} ms`);
    await Deno.remove(`${dir}/strict.yaml`);
    await p.until(() => mode() === "PERMISSIVE", 1300);
  });
});

Deno.test("an invalid file never removes valid config; the rejection names file, line and field", async () => {
  await withDiscovery(async ({ dir, connect, rejected, server }) => {
    const p = connect("foo", "httpbin-1");
    const mode = () => p.decoded(TYPE_URLS.workload, "workload", "foo/httpbin-1")?.defaultMtls?.mode;
    await Deno.writeTextFile(`${dir}/strict.yaml`, STRICT);
    await p.until(() => mode() === "STRICT", 1300);
    await Deno.writeTextFile(`${dir}/strict.yaml`, STRICT.replace("STRICT", "STRIKT"));
    await Deno.writeTextFile(`${dir}/garbage.yaml`, "kind: [\n");
    await p.until(() => rejected.length >= 2, 2000);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(mode(), "STRICT", "the last good PeerAuthentication stays in force");
    assert.equal(server.pushContext.services.length, 1);
    const issue = rejected.find((i) => i.file.endsWith("strict.yaml"))!;
    assert.equal(issue.line, 4);
    assert.equal(issue.field, "spec.mtls.mode");
  });
});

Deno.test("auto-registration: a proxy naming a WorkloadGroup becomes a service endpoint until the grace period after it leaves", async () => {
  await withDiscovery(async ({ dir, connect, server }) => {
    await Deno.writeTextFile(
      `${dir}/group.yaml`,
      `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: httpbin-vm, namespace: foo}
spec:
  metadata: {labels: {app: httpbin}}
  template: {serviceAccount: httpbin, ports: {http: 8080}}
`,
    );
    const sleep = connect("foo", "sleep-1");
    const endpoints = () =>
      (sleep.decoded(TYPE_URLS.service, "service", "foo/httpbin")?.endpoints ?? []).map((
        e: { address: string },
      ) => e.address).sort();
    await sleep.until(() => endpoints().length === 1, 3000);
    await sleep.until(() => server.store.snapshot().resources.some((r) => r.kind === "WorkloadGroup"), 3000);
    const vm = connect("", "", {
      id: "sidecar~10.7.0.9~vm.foo~foo.svc.cluster.local",
      metadata: { AUTO_REGISTER_GROUP: "httpbin-vm", NAMESPACE: "foo", INSTANCE_IPS: "10.7.0.9" },
    });
    await sleep.until(() => endpoints().join() === "10.1.0.2,10.7.0.9", 3000);
    await vm.until(() => vm.held.get(TYPE_URLS.workload)?.has("foo/httpbin-vm-10.7.0.9") ?? false, 3000);
    assert.equal(server.pushContext.workloads.get("foo/httpbin-vm-10.7.0.9")?.proxied, true);
    vm.call.cancel();
    await sleep.until(() => endpoints().join() === "10.1.0.2", 3000);
  }, { autoRegistration: { gracePeriodMs: 300 } });
});

Deno.test("a workload stays proxied while its proxy reconnects within the grace, and not after", async () => {
  await withDiscovery(async ({ connect }) => {
    const sleep = connect("foo", "sleep-1");
    const proxied = () => sleep.decoded(TYPE_URLS.service, "service", "foo/httpbin")?.endpoints[0].proxied;
    let httpbin = connect("foo", "httpbin-1");
    await sleep.until(() => proxied() === true, 3000);
    // A broken connection (a serving child died) and a reconnect 200 ms later: never unproxied.
    httpbin.call.cancel();
    await new Promise((r) => setTimeout(r, 200));
    httpbin = connect("foo", "httpbin-1");
    await httpbin.until(() => httpbin.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1") ?? false, 3000);
    const watchUntil = Date.now() + 1200;
    while (Date.now() < watchUntil) {
      assert.equal(proxied(), true, "httpbin was unproxied while its proxy reconnected");
      await new Promise((r) => setTimeout(r, 20));
    }
    // Gone for good: unproxied once the grace has passed.
    httpbin.call.cancel();
    const took = await sleep.until(() => proxied() === false, 600 + 100 + 1500);
    assert.ok(took >= 550, `unproxied after ${took} ms, before the 600 ms grace`);
  }, { proxiedGraceMs: 600 });
});

Deno.test("through serving children (real child processes): config, pushes and the proxied flag", async () => {
  await withDiscovery(async ({ connect, server }) => {
    const sleep = connect("foo", "sleep-1");
    connect("foo", "httpbin-1");
    await sleep.until(
      () => sleep.decoded(TYPE_URLS.service, "service", "foo/httpbin")?.endpoints[0].proxied === true,
      5000,
    );
    assert.equal(server.servingChildren.length, 2);
    const servingz = JSON.parse(
      server.debugPages.render({ name: "servingz", query: new URLSearchParams() }).body,
    );
    assert.equal(servingz.children.length, 2);
    assert.equal(servingz.deaths, 0);
    assert.ok(server.ads.streams().every((s) => /^127\.0\.0\.1:\d+$/.test(s.peer)), "the clients' addresses");
  }, { servingChildren: 2 });
});

Deno.test("a connect alone derives the push context and pushes only the proxies it concerns", async () => {
  const rounds: number[] = [];
  const contexts: string[] = [];
  await withDiscovery(async ({ dir, server, connect }) => {
    await Deno.writeTextFile(
      `${dir}/client.yaml`,
      `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: client-1, namespace: foo}
spec: {address: 10.1.0.4, labels: {app: client}, serviceAccount: client}
`,
    );
    const sleep = connect("foo", "sleep-1");
    const proxied = (p: typeof sleep, name: string) => () =>
      p.decoded(TYPE_URLS.workload, "workload", `foo/${name}`)?.proxied === true;
    await sleep.until(proxied(sleep, "sleep-1"), 3000);
    await sleep.until(() => server.pushContext.workloads.has("foo/client-1"), 3000);
    const before = rounds.length;
    // client-1 is no service's endpoint: its connect changes its own Workload and nothing of sleep's.
    const client = connect("foo", "client-1");
    await client.until(proxied(client, "client-1"), 3000);
    await new Promise((r) => setTimeout(r, 300));
    // One push since, to client-1's stream alone: sleep's was not swept.
    assert.deepEqual(rounds.slice(before), [1]);
    assert.equal(contexts.at(-1), "connected", "the last push context was derived, not built whole");
    assert.equal(server.pushContext.workloads.get("foo/sleep-1")?.proxied, true);
  }, {
    adsHooks: { onPushFanout: (_ms, streams) => rounds.push(streams) },
    onPushContext: (_ctx, _ms, _reasons, how) => contexts.push(how),
  });
});

Deno.test("a policy edit updates the push context from the last and reaches the proxies; a service edit builds", async () => {
  const contexts: string[] = [];
  await withDiscovery(async ({ dir, server, connect }) => {
    const sleep = connect("foo", "sleep-1");
    await sleep.until(
      () => sleep.decoded(TYPE_URLS.workload, "workload", "foo/sleep-1")?.proxied === true,
      3000,
    );
    const services = server.pushContext.services;
    await Deno.writeTextFile(
      `${dir}/deny.yaml`,
      `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-admin, namespace: foo}
spec:
  action: DENY
  rules: [{to: [{operation: {paths: ["/admin"]}}]}]
`,
    );
    await sleep.until(
      () => sleep.decoded(TYPE_URLS.authorization, "authorization", "foo/deny-admin") !== undefined,
      3000,
    );
    assert.equal(contexts.at(-1), "updated");
    assert.equal(server.pushContext.services, services, "the services are the last context's");
    await Deno.writeTextFile(
      `${dir}/deny.yaml`,
      `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`,
    );
    await sleep.until(
      () => sleep.decoded(TYPE_URLS.workload, "workload", "foo/sleep-1")?.defaultMtls?.mode === "STRICT",
      3000,
    );
    await sleep.until(
      () => sleep.decoded(TYPE_URLS.authorization, "authorization", "foo/deny-admin") === undefined,
      3000,
    );
    assert.equal(contexts.at(-1), "updated");
    await Deno.writeTextFile(
      `${dir}/more.yaml`,
      `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: more, namespace: foo}
spec: {hosts: [more.foo.svc.cluster.local], ports: [{number: 80, name: http, protocol: HTTP}], resolution: STATIC}
`,
    );
    await sleep.until(() => sleep.decoded(TYPE_URLS.service, "service", "foo/more") !== undefined, 3000);
    assert.equal(contexts.at(-1), "built");
  }, { onPushContext: (_ctx, _ms, _reasons, how) => contexts.push(how) });
});
