/**
 * meshctl orch-inject against meshd's injection webhook: Istio's samples (tests/fixtures/istio_samples)
 * injected offline equal what meshd's `/inject` handler makes of the same pods (its AdmissionReview
 * response's patch applied), and the documents it does not inject pass byte for byte.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { handleInject } from "../../../meshd/webhooks/handler.ts";
import { admissionReview, POD_KIND } from "../../../meshd/webhooks/test_support.ts";
import { applyJsonPatch, type JsonObject } from "../../../shared/internal/inject/json.ts";
import { defaultTemplate } from "../../../shared/internal/inject/template.ts";
import { meshctl } from "./install_support.ts";

const SAMPLES = new URL("../../fixtures/istio_samples/", import.meta.url);
const SETTINGS = { nativeSidecars: false, tokenAudience: "mesh-ca", revision: "default" };

/** What meshd's webhook makes of a Deployment's pod template in namespace `ns`. */
function webhookInjected(deployment: JsonObject, ns: string): JsonObject {
  const tpl = (deployment.spec as JsonObject).template as JsonObject;
  const pod: JsonObject = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: tpl.metadata ?? {},
    spec: tpl.spec ?? {},
  };
  const reply = handleInject(JSON.stringify(admissionReview(pod, POD_KIND, { namespace: ns })), {
    enabled: true,
    template: defaultTemplate("mesh-system"),
    settings: SETTINGS,
  });
  assert.ok("review" in reply, "badRequest" in reply ? reply.badRequest : "");
  const response = reply.review.response as { patch?: string; allowed: boolean };
  assert.ok(response.allowed && response.patch, "the webhook injected");
  return applyJsonPatch(pod, JSON.parse(Buffer.from(response.patch, "base64").toString()));
}

Deno.test("orch-inject: Istio's samples equal meshd's webhook patch; other documents pass unchanged", async () => {
  for (const file of ["httpbin.yaml", "sleep.yaml", "curl.yaml"]) {
    const path = new URL(file, SAMPLES).pathname;
    const r = await meshctl("/nonexistent", ["-n", "foo", "orch-inject", "-f", path]);
    assert.equal(r.code, 0, r.err);
    // Empty documents (a trailing ---) are dropped, as kube-inject drops them.
    const input = parseAllDocuments(await Deno.readTextFile(path)).map((d) => d.toJS() as JsonObject)
      .filter((o) => o !== null);
    const output = parseAllDocuments(r.out).map((d) => d.toJS() as JsonObject);
    assert.equal(output.length, input.length, file);
    for (const [i, o] of output.entries()) {
      if (input[i].kind !== "Deployment") {
        assert.deepEqual(o, input[i], `${file}: ${input[i].kind} unchanged`);
        continue;
      }
      const want = webhookInjected(input[i], "foo");
      const got = (o.spec as JsonObject).template as JsonObject;
      assert.deepEqual(got, { metadata: want.metadata, spec: want.spec }, `${file}: the webhook's pod`);
      const names = ((got.spec as JsonObject).containers as JsonObject[]).map((c) => c.name);
      assert.ok(names.includes("mesh-proxy"), `${file}: ${names}`);
      const { template: _t, ...restOut } = o.spec as JsonObject;
      const { template: _u, ...restIn } = input[i].spec as JsonObject;
      assert.deepEqual(restOut, restIn, `${file}: the rest of the Deployment unchanged`);
    }
  }
});

Deno.test("orch-inject: standard input, -o file, opted-out pods and unsupported kinds pass as given", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const text =
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    sidecar.istio.io/inject: "false"\n' +
      "spec:\n  containers:\n    - name: a\n      image: x\n---\n# a comment kept\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    const file = join(dir, "in.yaml");
    await Deno.writeTextFile(file, text);
    const out = join(dir, "out.yaml");
    const r = await meshctl("/nonexistent", ["orch-inject", "-f", file, "-o", out]);
    assert.equal(r.code, 0, r.err);
    assert.equal(await Deno.readTextFile(out), text);
    const bad = await meshctl("/nonexistent", ["orch-inject", "-f", join(dir, "nope.yaml")]);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /-f .*nope\.yaml: No such file/);
    const wrong = join(dir, "wrong.yaml");
    await Deno.writeTextFile(
      wrong,
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    sidecar.mesh.io/inject: maybe\nspec: {}\n",
    );
    const refused = await meshctl("/nonexistent", ["orch-inject", "-f", wrong]);
    assert.match(
      refused.err,
      /document 1 \(Pod p\): metadata\.labels\.sidecar\.mesh\.io\/inject: "maybe" must be true or false/,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        new URL("../../../meshctl/main.ts", import.meta.url).pathname,
        "orch-inject",
        "-f",
        "-",
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(await Deno.readTextFile(new URL("httpbin.yaml", SAMPLES))));
    await w.close();
    const res = await child.output();
    assert.equal(res.code, 0, new TextDecoder().decode(res.stderr));
    assert.match(new TextDecoder().decode(res.stdout), /name: mesh-proxy/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
