import assert from "node:assert/strict";
import type { JsonObject } from "./json.ts";
import { injectionPatch, redirectScript } from "./inject_patch.ts";
import { defaultTemplate, parseTemplate } from "./template.ts";
import { applyJsonPatch } from "./json.ts";
import { httpbinPod } from "./test_support.ts";

const SETTINGS = { nativeSidecars: false, tokenAudience: "mesh-ca", revision: "default" };
const names = (list: unknown) => (list as JsonObject[]).map((c) => c.name);

Deno.test("injectionPatch: httpbin gets the proxy, the init container, the token and root volumes, and its status", () => {
  const pod = httpbinPod();
  const patched = applyJsonPatch(pod, injectionPatch(pod, defaultTemplate("mesh-system"), SETTINGS));
  const spec = patched.spec as JsonObject;
  assert.deepEqual(names(spec.containers), ["httpbin", "mesh-proxy"]);
  assert.deepEqual(names(spec.initContainers), ["mesh-init"]);
  assert.deepEqual(names(spec.volumes), ["kube-api-access-abcde", "mesh-token", "mesh-ca-root"]);
  const proxy = (spec.containers as JsonObject[])[1];
  assert.deepEqual(proxy.args, [
    "--type=sidecar",
    "--discoveryAddress=meshd.mesh-system.svc:15012",
    "--namespace=$(POD_NAMESPACE)",
    "--serviceAccount=$(SERVICE_ACCOUNT)",
    "--workloadEntry=$(POD_NAME)",
    "--address=$(INSTANCE_IP)",
    "--labels=app=httpbin,version=v1,pod-template-hash=6f4d8f7b9c",
    "--inbound=80=127.0.0.1:80",
    "--outbound=127.0.0.1:15001",
    "--proxy-admin-port=15000",
  ]);
  assert.equal(proxy.restartPolicy, undefined);
  assert.deepEqual((proxy.securityContext as JsonObject).runAsUser, 1337);
  const [token, root] = (spec.volumes as JsonObject[]).slice(1);
  assert.deepEqual(token.projected, {
    sources: [{ serviceAccountToken: { audience: "mesh-ca", expirationSeconds: 43200, path: "mesh-token" } }],
  });
  assert.deepEqual((root.configMap as JsonObject).name, "mesh-ca-root-cert");
  // The proxy's default --tokenFile and --rootCertFile are where the volumes are mounted.
  assert.deepEqual((proxy.volumeMounts as JsonObject[]).map((m) => m.mountPath), [
    "/var/run/secrets/tokens",
    "/var/run/secrets/mesh",
  ]);
  const meta = patched.metadata as JsonObject;
  const status = JSON.parse((meta.annotations as Record<string, string>)["sidecar.mesh.io/status"]);
  assert.deepEqual(status, {
    initContainers: ["mesh-init"],
    containers: ["mesh-proxy"],
    volumes: ["mesh-token", "mesh-ca-root"],
    revision: "default",
  });
  assert.equal((meta.labels as Record<string, string>)["security.istio.io/tlsMode"], "istio");
  // The original is untouched and the application container unchanged.
  assert.deepEqual(
    (spec.containers as JsonObject[])[0],
    (httpbinPod().spec as JsonObject & { containers: JsonObject[] }).containers[0],
  );
});

Deno.test("injectionPatch: ENABLE_NATIVE_SIDECARS makes the proxy an init container with restartPolicy Always, after mesh-init", () => {
  const pod = httpbinPod();
  const patched = applyJsonPatch(
    pod,
    injectionPatch(pod, defaultTemplate("mesh-system"), { ...SETTINGS, nativeSidecars: true }),
  );
  const spec = patched.spec as JsonObject;
  assert.deepEqual(names(spec.containers), ["httpbin"]);
  assert.deepEqual(names(spec.initContainers), ["mesh-init", "mesh-proxy"]);
  assert.equal((spec.initContainers as JsonObject[])[1].restartPolicy, "Always");
});

Deno.test("injectionPatch: a pod with no volumes, init containers, annotations or metadata gets them created", () => {
  const pod: JsonObject = {
    apiVersion: "v1",
    kind: "Pod",
    spec: { containers: [{ name: "app", image: "a" }] },
  };
  const patched = applyJsonPatch(pod, injectionPatch(pod, defaultTemplate("mesh-system"), SETTINGS));
  const spec = patched.spec as JsonObject;
  assert.deepEqual(names(spec.volumes), ["mesh-token", "mesh-ca-root"]);
  assert.deepEqual(names(spec.initContainers), ["mesh-init"]);
  assert.ok((patched.metadata as JsonObject).annotations);
});

Deno.test("injectionPatch: annotation keys with / are escaped as JSON pointers", () => {
  const pod = httpbinPod();
  (pod.metadata as JsonObject).annotations = { "a/b~c": "x" };
  const ops = injectionPatch(pod, defaultTemplate("mesh-system"), SETTINGS);
  assert.ok(ops.some((o) => o.path === "/metadata/annotations/sidecar.mesh.io~1status"));
  const patched = applyJsonPatch(pod, ops);
  assert.equal(((patched.metadata as JsonObject).annotations as Record<string, string>)["a/b~c"], "x");
});

Deno.test("redirectScript: the lab sidecar's REDIRECT to 15001, after returns for the proxy's user, loopback and exclusions", () => {
  assert.equal(
    redirectScript(defaultTemplate("mesh-system")),
    [
      "set -e",
      "iptables -w -t nat -A OUTPUT -p tcp -m owner --uid-owner 1337 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -m owner --gid-owner 1337 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -o lo -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -d 127.0.0.0/8 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001",
      // IPv6 as istio-iptables does it: the same rules with ::1/128, only where the kernel has IPv6.
      "if [ -e /proc/net/if_inet6 ]; then",
      "ip6tables -w -t nat -A OUTPUT -p tcp -m owner --uid-owner 1337 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -m owner --gid-owner 1337 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -o lo -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -d ::1/128 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001",
      "fi",
    ].join("\n"),
  );
  const t = parseTemplate(
    {
      values: JSON.stringify({
        global: { proxy: { includeIPRanges: "10.96.0.0/12", excludeIPRanges: "10.96.0.1/32" } },
      }),
    },
    "values",
    "mesh-system",
  );
  // Include ranges of IPv4 only: no IPv6 REDIRECT at all (istio-iptables' separateV4V6).
  assert.deepEqual(redirectScript(t).split("\n").slice(5), [
    "iptables -w -t nat -A OUTPUT -p tcp -d 10.96.0.1/32 -j RETURN",
    "iptables -w -t nat -A OUTPUT -p tcp -d 10.96.0.0/12 -j REDIRECT --to-ports 15001",
    "if [ -e /proc/net/if_inet6 ]; then",
    "ip6tables -w -t nat -A OUTPUT -p tcp -m owner --uid-owner 1337 -j RETURN",
    "ip6tables -w -t nat -A OUTPUT -p tcp -m owner --gid-owner 1337 -j RETURN",
    "ip6tables -w -t nat -A OUTPUT -p tcp -o lo -j RETURN",
    "ip6tables -w -t nat -A OUTPUT -p tcp -d ::1/128 -j RETURN",
    "fi",
  ]);
  // Mixed families: each tool gets its own ranges.
  assert.deepEqual(
    redirectScript(t, {
      "traffic.sidecar.istio.io/includeOutboundIPRanges": "10.96.0.0/12,fd00:10:96::/112",
      "traffic.sidecar.istio.io/excludeOutboundIPRanges": "10.96.0.1/32,fd00:10:96::1/128",
    }).split("\n").filter((l) => l.includes(" -d ") && !/ -d (127\.0\.0\.0\/8|::1\/128) /.test(l)),
    [
      "iptables -w -t nat -A OUTPUT -p tcp -d 10.96.0.1/32 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -d 10.96.0.0/12 -j REDIRECT --to-ports 15001",
      "ip6tables -w -t nat -A OUTPUT -p tcp -d fd00:10:96::1/128 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -d fd00:10:96::/112 -j REDIRECT --to-ports 15001",
    ],
  );
  // Istio's pod annotations override the template's ranges and add excluded ports.
  assert.deepEqual(
    redirectScript(t, {
      "traffic.sidecar.istio.io/includeOutboundIPRanges": "*",
      "traffic.sidecar.istio.io/excludeOutboundIPRanges": "10.0.0.0/8, 192.168.1.1/32",
      "traffic.sidecar.istio.io/excludeOutboundPorts": "5432,6379",
    }).split("\n").slice(5),
    [
      "iptables -w -t nat -A OUTPUT -p tcp -d 10.0.0.0/8 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -d 192.168.1.1/32 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp --dport 5432 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp --dport 6379 -j RETURN",
      "iptables -w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001",
      "if [ -e /proc/net/if_inet6 ]; then",
      "ip6tables -w -t nat -A OUTPUT -p tcp -m owner --uid-owner 1337 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -m owner --gid-owner 1337 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -o lo -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -d ::1/128 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp --dport 5432 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp --dport 6379 -j RETURN",
      "ip6tables -w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001",
      "fi",
    ],
  );
  assert.throws(
    () => redirectScript(t, { "traffic.sidecar.istio.io/excludeOutboundPorts": "53,dns" }),
    /pod annotation traffic\.sidecar\.istio\.io\/excludeOutboundPorts: "dns" is not a port \(1-65535\)/,
  );
  assert.throws(
    () => redirectScript(t, { "traffic.sidecar.istio.io/excludeOutboundIPRanges": "10.0.0.0/33" }),
    /pod annotation traffic\.sidecar\.istio\.io\/excludeOutboundIPRanges: "10\.0\.0\.0\/33" is not a CIDR/,
  );
});
