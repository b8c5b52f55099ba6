import assert from "node:assert/strict";
import { containerRun, imageRepository } from "./images.ts";

const ctx = { bindIp: "127.0.0.1", deno: "/deno", repoRoot: "/repo" };

Deno.test("imageRepository drops the registry, library/, the tag and the digest", () => {
  for (
    const [image, repo] of [
      ["docker.io/mccutchen/go-httpbin:v2.15.0", "mccutchen/go-httpbin"],
      ["kennethreitz/httpbin", "kennethreitz/httpbin"],
      ["docker.io/library/nginx:1.27", "nginx"],
      ["curlimages/curl@sha256:abc", "curlimages/curl"],
      ["localhost:5000/mesh/proxy:1", "localhost:5000/mesh/proxy"],
    ]
  ) assert.deepStrictEqual(imageRepository(image), repo, image);
});

Deno.test("Istio's httpbin images run httpbin under gunicorn on the first container port, at the bind address", () => {
  const r = containerRun(
    { name: "httpbin", image: "docker.io/mccutchen/go-httpbin:v2.15.0", ports: [{ containerPort: 8080 }] },
    ctx,
  );
  assert.deepStrictEqual(r, {
    kind: "process",
    argv: ["/usr/bin/gunicorn", "-b", "127.0.0.1:8080", "-k", "gthread", "httpbin:app"],
  });
  const old = containerRun({ name: "h", image: "kennethreitz/httpbin" }, { ...ctx, bindIp: "0.0.0.0" });
  assert.deepStrictEqual(old.kind === "process" && old.argv[2], "0.0.0.0:80");
});

Deno.test("the curl image runs the container's command as given, else sleeps", () => {
  assert.deepStrictEqual(
    containerRun({
      name: "sleep",
      image: "docker.io/curlimages/curl:8.16.0",
      command: ["/bin/sleep", "infinity"],
    }, ctx),
    { kind: "process", argv: ["/bin/sleep", "infinity"] },
  );
  assert.deepStrictEqual(containerRun({ name: "c", image: "curlimages/curl" }, ctx), {
    kind: "process",
    argv: ["/bin/sleep", "infinity"],
  });
});

Deno.test("the proxy image runs proxy/main.ts with the container's args; with a command (mesh-init) that command; runAsGroup as gid", () => {
  const r = containerRun({ name: "mesh-proxy", image: "mesh/proxy:latest", args: ["--type=sidecar"] }, ctx);
  assert.deepStrictEqual(r.kind === "process" && r.argv.slice(-2), ["/repo/proxy/main.ts", "--type=sidecar"]);
  // The injected init container's own script (iptables and ip6tables), as given.
  assert.deepStrictEqual(
    containerRun({
      name: "mesh-init",
      image: "mesh/proxy:latest",
      command: ["sh", "-c", "set -e\niptables -w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001"],
      securityContext: { runAsGroup: 0 },
    }, ctx),
    {
      kind: "process",
      argv: ["sh", "-c", "set -e\niptables -w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001"],
    },
  );
  // The injected proxy's gid 1337, which the capture rules leave alone.
  const proxy = containerRun({
    name: "mesh-proxy",
    image: "mesh/proxy",
    args: ["--type=sidecar"],
    securityContext: { runAsGroup: 1337 },
  }, ctx);
  assert.deepStrictEqual(
    proxy.kind === "process" && proxy.argv.slice(0, 4),
    ["/usr/bin/setpriv", "--regid=1337", "--clear-groups", "/deno"],
  );
});

Deno.test("an unknown image is refused with ErrImagePull naming the container, the image and the table", () => {
  const r = containerRun({ name: "web", image: "nginx:1.27" }, ctx);
  assert.deepStrictEqual(r.kind, "refused");
  if (r.kind !== "refused") return;
  assert.deepStrictEqual(r.reason, "ErrImagePull");
  assert.match(
    r.message,
    /^container web: image "nginx:1\.27" is not in the lab node's image table \(deploy\/lab\/node_agent\/images\.ts: /,
  );
  assert.deepStrictEqual(containerRun({ name: "x" }, ctx).kind, "refused");
});
