import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { CRDS_FILE, istioAliasCrds, labObjectsYaml, namespacesYaml } from "./kube_config.ts";
import { startKubeApi } from "./kube_api/mod.ts";
import { kubectlMissing, kubectlOk } from "./kube_api/test_support.ts";
import { discovery } from "../../meshd/cli_test_support.ts";
import { labNames } from "../../shared/internal/lab/naming.ts";
import { planLab } from "../../shared/internal/lab/plan.ts";
import { parseTopology } from "../../shared/internal/lab/topology.ts";
import { repoRoot } from "../../shared/internal/lab/state.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const quickstart = new URL("./quickstart.yaml", import.meta.url).pathname;
const plan = planLab(
  labNames("qs", "10.250.0.0/24"),
  parseTopology(Deno.readTextFileSync(quickstart), quickstart),
);
const crds = `${repoRoot()}${CRDS_FILE}`;

Deno.test("istioAliasCrds: the 8 mesh CRDs under Istio's groups, named <plural>.<group>, schema kept", () => {
  const text = Deno.readTextFileSync(crds);
  const mesh = parseAllDocuments(text).map((d) => d.toJS());
  const aliases = parseAllDocuments(istioAliasCrds(text)).map((d) => d.toJS());
  assert.equal(aliases.length, 8);
  assert.deepEqual(aliases.map((c) => c.metadata.name).sort(), [
    "authorizationpolicies.security.istio.io",
    "gateways.networking.istio.io",
    "peerauthentications.security.istio.io",
    "requestauthentications.security.istio.io",
    "serviceentries.networking.istio.io",
    "virtualservices.networking.istio.io",
    "workloadentries.networking.istio.io",
    "workloadgroups.networking.istio.io",
  ]);
  aliases.forEach((a, i) => assert.deepEqual(a.spec.versions, mesh[i].spec.versions));
  assert.throws(
    () => istioAliasCrds(text.replaceAll("security.mesh.io", "other.example.com")),
    /no Istio group/,
  );
});

Deno.test("namespacesYaml: every topology namespace and the root namespace (mesh-system, or meshConfig's)", () => {
  const names = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS().metadata.name);
  assert.deepEqual(names(namespacesYaml(plan)), ["bar", "foo", "legacy", "mesh-system"]);
  assert.deepEqual(names(namespacesYaml({ ...plan, meshConfig: { rootNamespace: "istio-system" } })), [
    "bar",
    "foo",
    "istio-system",
    "legacy",
  ]);
});

Deno.test(requires(kubectlMissing(), {
  name: "lab config through kubectl only: meshd discovery --kubeconfig serves it (/debug/configz)",
  async fn() {
    const api = await startKubeApi();
    try {
      const kc = api.kubeconfig;
      await kubectlOk(kc, ["apply", "-f", crds]);
      await kubectlOk(kc, ["apply", "-f", "-"], istioAliasCrds(await Deno.readTextFile(crds)));
      await kubectlOk(kc, ["apply", "-f", "-"], labObjectsYaml(plan));
      await kubectlOk(kc, [
        "apply",
        "-f",
        `${repoRoot()}deploy/quickstart/peer_authentication_foo_strict.yaml`,
      ]);
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      listener.close();
      let configz = "";
      const r = await discovery(["--configDir", "", "--kubeconfig", kc, "--httpAddr", `127.0.0.1:${port}`], {
        vars: { ENABLE_DEBUG_ON_HTTP: "true" },
        whileReady: async () => {
          const res = await within(fetch(`http://127.0.0.1:${port}/debug/configz`), 5000, "configz");
          configz = await res.text();
        },
      });
      assert.equal(r.code, 0, r.err);
      for (
        const key of [
          "ServiceEntry/foo/httpbin",
          "ServiceEntry/bar/httpbin",
          "ServiceEntry/legacy/httpbin",
          "WorkloadGroup/foo/sleep",
          "WorkloadGroup/bar/httpbin",
          "WorkloadEntry/legacy/httpbin",
          "WorkloadEntry/legacy/sleep",
          "PeerAuthentication/foo/default",
        ]
      ) assert.ok(configz.includes(key), `${key} not in /debug/configz: ${configz.slice(0, 2000)}`);
    } finally {
      await api.stop();
    }
  },
}));
