/**
 * The install manifests: each parses; the Kubernetes objects match the API schema (schema_check.ts);
 * the mesh kinds pass shared's validator (meshctl validate); and names agree across files (selectors and
 * labels, webhook services and ports, RBAC subjects, meshd's listen flags and environment variables,
 * the proxy's flags).
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { ACCEPTED_API_VERSIONS, formatIssue, KINDS, MESH_GROUPS, validateText } from "../../shared/mod.ts";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { ENV_VARS } from "../../meshd/options/environment.ts";
import { DISCOVERY_FLAGS } from "../../meshd/options/discovery_flag_table.ts";
import { PROXY_FLAGS } from "../../proxy/options/flags.ts";
import { loadManifests, type ManifestDocument, manifestFiles, MANIFESTS_DIR } from "./manifests.ts";
import { checkKubernetesObject } from "./schema_check.ts";

type Obj = Record<string, unknown>;
const docs = await loadManifests();

/** The value at a dotted path (`spec.template.metadata.labels`), or undefined. */
function at(o: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((v, k) => (v as Obj | undefined)?.[k], o);
}
function list(o: unknown, path: string): Obj[] {
  const v = at(o, path);
  return Array.isArray(v) ? v : [];
}
function labels(o: unknown, path: string): Record<string, string> {
  return (at(o, path) ?? {}) as Record<string, string>;
}
function name(d: ManifestDocument): string {
  return `${d.file}: ${d.object.kind} ${at(d.object, "metadata.namespace") ?? ""}/${
    at(d.object, "metadata.name")
  }`;
}
function find(kind: string, nm: string, namespace?: string): ManifestDocument {
  const d = docs.find((d) =>
    d.object.kind === kind && at(d.object, "metadata.name") === nm &&
    (namespace === undefined || at(d.object, "metadata.namespace") === namespace)
  );
  assert.ok(d, `no ${kind} ${namespace ?? ""}/${nm} in deploy/kubernetes`);
  return d;
}
function ofKind(kind: string): ManifestDocument[] {
  return docs.filter((d) => d.object.kind === kind);
}
function isMesh(d: ManifestDocument): boolean {
  return String(d.object.apiVersion).split("/")[0].match(/\.(mesh|istio)\.io$/) !== null;
}
/** Whether every label a selector asks for is on `on`. */
function selects(selector: Record<string, string>, on: Record<string, string>): boolean {
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => on[k] === v);
}
function container(deployment: ManifestDocument): Obj {
  const [c] = list(deployment.object, "spec.template.spec.containers");
  return c;
}
/** `--name=value` arguments of a container, by name. */
function args(c: Obj): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of list(c, "args") as unknown as string[]) {
    const m = /^--([^=]+)=(.*)$/.exec(a);
    if (m) out.set(m[1], m[2]);
  }
  return out;
}
const plurals = (group: "security" | "networking"): string[] =>
  KINDS.filter((k) => k.group === group).map((k) => k.plural).sort();
const groups = (group: "security" | "networking"): string[] =>
  [
    ...new Set(ACCEPTED_API_VERSIONS[group].map((v) => v.split("/")[0])),
  ].sort();

Deno.test("kustomization.yaml lists every YAML file of deploy/kubernetes, and each has documents", async () => {
  const listed = await manifestFiles();
  const onDisk: string[] = [];
  for await (const e of Deno.readDir(MANIFESTS_DIR)) {
    if (e.name.endsWith(".yaml") && e.name !== "kustomization.yaml") onDisk.push(e.name);
  }
  assert.deepEqual([...listed].sort(), onDisk.sort());
  for (const f of listed) assert.ok(docs.some((d) => d.file === f), `${f} has no documents`);
});

Deno.test("every Kubernetes object matches the API schema of @kubernetes/client-node", () => {
  const failures: string[] = [];
  for (const d of docs.filter((d) => !isMesh(d))) {
    for (const e of checkKubernetesObject(d.object)) failures.push(`${name(d)}: ${e.path}: ${e.reason}`);
  }
  assert.deepEqual(failures, []);
  assert.ok(docs.filter((d) => !isMesh(d)).length >= 20);
});

Deno.test("the schema check finds a misspelt field, a wrong type, a missing field and a wrong scope", () => {
  const d = structuredClone(find("Deployment", "meshd").object);
  const c = list(d, "spec.template.spec.containers")[0];
  (list(c, "ports")[0] as Obj).containerport = 1;
  c.args = "discovery";
  delete (d.spec as Obj).selector;
  const reasons = checkKubernetesObject(d).map((e) => `${e.path}: ${e.reason}`);
  assert.ok(
    reasons.includes(
      "spec.template.spec.containers[0].ports[0].containerport: unknown field (not in V1ContainerPort)",
    ),
  );
  assert.ok(reasons.includes("spec.template.spec.containers[0].args: must be a list; got string"));
  assert.ok(reasons.includes("spec.selector: required"));
  const ns = { ...find("Namespace", "mesh-system").object, metadata: { name: "x", namespace: "y" } };
  assert.deepEqual(checkKubernetesObject(ns).map((e) => e.path), ["metadata.namespace"]);
  assert.deepEqual(checkKubernetesObject({ ...ns, apiVersion: "apps/v1" }).map((e) => e.reason), [
    "apps/v1 serves no kind Namespace",
  ]);
});

Deno.test("the mesh kinds pass shared's validator, as meshctl validate checks them", () => {
  const mesh = docs.filter(isMesh);
  assert.ok(mesh.length > 0);
  for (const d of mesh) {
    const result = validateText(d.text, `deploy/kubernetes/${d.file}`);
    assert.deepEqual(result.issues.map(formatIssue), [], name(d));
    assert.equal(result.resources.length, 1, name(d));
  }
});

Deno.test("crds.yaml holds one CRD of each mesh kind, as codegen writes them to deploy/crds", async () => {
  const crds = docs.filter((d) => d.file === "crds.yaml");
  assert.deepEqual(
    crds.map((d) => at(d.object, "metadata.name")),
    KINDS.map((k) => `${k.plural}.${MESH_GROUPS[k.group]}`),
  );
  for (const k of KINDS) {
    const file = await Deno.readTextFile(
      new URL(`../crds/${k.plural}.${MESH_GROUPS[k.group]}.yaml`, MANIFESTS_DIR),
    );
    const d = crds.find((d) => at(d.object, "spec.names.plural") === k.plural);
    assert.deepEqual(d?.object, parse(file), `${k.plural}: crds.yaml differs from deploy/crds`);
  }
});

Deno.test("every namespaced object is in mesh-system, which namespace.yaml creates", () => {
  find("Namespace", "mesh-system");
  for (const d of docs) {
    const ns = at(d.object, "metadata.namespace");
    if (ns !== undefined) assert.equal(ns, "mesh-system", name(d));
  }
});

Deno.test("Services and PodDisruptionBudgets select their Deployment's pods, which its selector matches", () => {
  const deployments = ofKind("Deployment");
  assert.equal(deployments.length, 2);
  for (const d of deployments) {
    const podLabels = labels(d.object, "spec.template.metadata.labels");
    assert.ok(selects(labels(d.object, "spec.selector.matchLabels"), podLabels), name(d));
  }
  for (const d of [...ofKind("Service"), ...ofKind("PodDisruptionBudget")]) {
    const selector = d.object.kind === "Service"
      ? labels(d.object, "spec.selector")
      : labels(d.object, "spec.selector.matchLabels");
    const matched = deployments.filter((dep) =>
      selects(selector, labels(dep.object, "spec.template.metadata.labels"))
    );
    assert.deepEqual(
      matched.map((m) => at(m.object, "metadata.name")),
      [at(d.object, "metadata.name")],
      name(d),
    );
  }
});

Deno.test("each Service targetPort is a declared containerPort of the pods it selects", () => {
  for (const svc of ofKind("Service")) {
    const dep = find("Deployment", String(at(svc.object, "metadata.name")), "mesh-system");
    const declared = list(container(dep), "ports").map((p) => p.containerPort);
    for (const p of list(svc.object, "spec.ports")) {
      assert.ok(declared.includes(p.targetPort), `${name(svc)}: ${p.name}`);
    }
  }
});

Deno.test("meshd listens where its Service and probe point: --grpcAddr, --secureGRPCAddr, --httpsAddr, --monitoringAddr", () => {
  const c = container(find("Deployment", "meshd"));
  assert.equal((list(c, "args") as unknown as string[])[0], "discovery");
  const a = args(c);
  const known = new Set(DISCOVERY_FLAGS.map((f) => f.name));
  for (const flag of a.keys()) assert.ok(known.has(flag), `meshd has no flag --${flag}`);
  const ports = new Map(list(c, "ports").map((p) => [p.name, p.containerPort]));
  assert.equal(a.get("grpcAddr"), `:${ports.get("grpc-xds")}`);
  assert.equal(a.get("secureGRPCAddr"), `:${ports.get("tls-xds")}`);
  assert.equal(a.get("httpsAddr"), `:${ports.get("https-webhook")}`);
  assert.equal(a.get("monitoringAddr"), `:${ports.get("http-monitoring")}`);
  assert.equal(at(c, "readinessProbe.httpGet.path"), "/ready");
  assert.equal(at(c, "readinessProbe.httpGet.port"), ports.get("http-monitoring"));
  assert.ok(
    !list(find("Service", "meshd").object, "spec.ports").some((p) => p.targetPort === 8080),
    "debug is not a Service port",
  );
  const mounts = list(c, "volumeMounts").map((m) => m.mountPath);
  assert.ok(
    mounts.includes(a.get("meshConfig")?.replace(/\/[^/]+$/, "")),
    "--meshConfig is on a mounted volume",
  );
});

Deno.test("meshd's environment variables are meshd's, and ROOT_CA_DIR is a writable emptyDir in memory", () => {
  const c = container(find("Deployment", "meshd"));
  const env = new Map(list(c, "env").map((e) => [e.name, e.value]));
  const known = new Set<string>(ENV_VARS.map((v) => v.name));
  for (const n of env.keys()) assert.ok(known.has(String(n)), `meshd reads no ${n}`);
  const defaults = new Map<string, unknown>(ENV_VARS.map((v) => [v.name, v.default]));
  for (const n of ["INJECTION_WEBHOOK_CONFIG_NAME", "VALIDATION_WEBHOOK_CONFIG_NAME"]) {
    assert.equal(env.get(n), defaults.get(n), `${n} stays its default`);
  }
  const mount = list(c, "volumeMounts").find((m) => m.mountPath === env.get("ROOT_CA_DIR"));
  const volume = list(find("Deployment", "meshd").object, "spec.template.spec.volumes").find((v) =>
    v.name === mount?.name
  );
  // meshd writes its copy of the CA Secret and its bootstrap-token key there (meshd/ca/kube_ca.ts); a
  // read-only mount would stop it, and a disk-backed one would put the CA key on the node's disk.
  assert.equal(at(volume, "emptyDir.medium"), "Memory");
  assert.notEqual(mount?.readOnly, true);
  assert.ok(
    !list(find("Deployment", "meshd").object, "spec.template.spec.volumes").some((v) => v.secret),
    "no Secret volume: the root comes from the API, so no Secret must exist before the install",
  );
});

Deno.test("every volumeMount names a volume of its pod", () => {
  for (const d of ofKind("Deployment")) {
    const volumes = list(d.object, "spec.template.spec.volumes").map((v) => v.name);
    for (const m of list(container(d), "volumeMounts")) {
      assert.ok(volumes.includes(m.name), `${name(d)}: ${m.name}`);
    }
  }
});

Deno.test("the webhook configurations are named as meshd patches them and call meshd's Service on its webhook port", () => {
  const defaults = new Map<string, unknown>(ENV_VARS.map((v) => [v.name, v.default]));
  const mutating = find(
    "MutatingWebhookConfiguration",
    String(defaults.get("INJECTION_WEBHOOK_CONFIG_NAME")),
  );
  const validating = find(
    "ValidatingWebhookConfiguration",
    String(defaults.get("VALIDATION_WEBHOOK_CONFIG_NAME")),
  );
  const svc = find("Service", "meshd", "mesh-system");
  const webhookPort = list(svc.object, "spec.ports").find((p) => p.name === "https-webhook");
  assert.equal(webhookPort?.targetPort, 15017);
  for (const [cfg, path] of [[mutating, "/inject"], [validating, "/validate"]] as const) {
    const hooks = list(cfg.object, "webhooks");
    assert.ok(hooks.length > 0);
    for (const h of hooks) {
      assert.deepEqual(at(h, "clientConfig.service"), {
        name: "meshd",
        namespace: "mesh-system",
        path,
        port: webhookPort?.port,
      });
      assert.equal(at(h, "clientConfig.caBundle"), undefined, "meshd patches caBundle");
    }
  }
  const rules = list(list(validating.object, "webhooks")[0], "rules");
  for (const g of ["security", "networking"] as const) {
    const rule = rules.find((r) => (r.apiGroups as string[]).includes(MESH_GROUPS[g]));
    assert.deepEqual([...rule?.apiGroups as string[]].sort(), groups(g));
    assert.deepEqual([...rule?.resources as string[]].sort(), plurals(g));
  }
});

Deno.test("RBAC: subjects are the ServiceAccount meshd runs as; roleRefs exist; rules are exactly the listed ones", () => {
  const deploymentSa = at(find("Deployment", "meshd").object, "spec.template.spec.serviceAccountName");
  find("ServiceAccount", String(deploymentSa), "mesh-system");
  for (const b of [...ofKind("ClusterRoleBinding"), ...ofKind("RoleBinding")]) {
    assert.deepEqual(list(b.object, "subjects"), [{
      kind: "ServiceAccount",
      name: deploymentSa,
      namespace: "mesh-system",
    }]);
    const kind = String(at(b.object, "roleRef.kind"));
    find(
      kind,
      String(at(b.object, "roleRef.name")),
      kind === "Role" ? at(b.object, "metadata.namespace") as string : undefined,
    );
  }
  const rules = list(find("ClusterRole", "meshd-mesh-system").object, "rules").map((r) =>
    `${(r.apiGroups as string[]).join(",")} ${(r.resources as string[]).join(",")} ${
      (r.verbs as string[]).join(",")
    }${r.resourceNames ? ` ${(r.resourceNames as string[]).join(",")}` : ""}`
  );
  const sec = plurals("security");
  const net = plurals("networking");
  const kindRules = (g: "security" | "networking", p: string[]): string[] => {
    const order = g === "security"
      ? ["peerauthentications", "requestauthentications", "authorizationpolicies"]
      : ["serviceentries", "workloadentries", "workloadgroups", "gateways", "virtualservices"];
    assert.deepEqual([...order].sort(), p, `the ${g} kinds changed: update rbac.yaml and webhooks.yaml`);
    const grp = [MESH_GROUPS[g], ...groups(g).filter((x) => x !== MESH_GROUPS[g])].join(",");
    return [
      `${grp} ${order.join(",")} get,list,watch`,
      `${grp} ${order.map((x) => `${x}/status`).join(",")} update,patch`,
    ];
  };
  assert.deepEqual(rules, [
    ...kindRules("security", sec),
    ...kindRules("networking", net),
    " services,pods,namespaces,serviceaccounts get,list,watch",
    "discovery.k8s.io endpointslices get,list,watch",
    " secrets get,list,watch",
    "authentication.k8s.io tokenreviews create",
    "admissionregistration.k8s.io mutatingwebhookconfigurations,validatingwebhookconfigurations get,list,watch",
    "admissionregistration.k8s.io mutatingwebhookconfigurations update mesh-sidecar-injector",
    "admissionregistration.k8s.io validatingwebhookconfigurations update mesh-mesh-system",
    " configmaps get,list,watch,update mesh-ca-root-cert",
    " configmaps create",
  ]);
  assert.deepEqual(list(find("Role", "meshd", "mesh-system").object, "rules"), [
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    { apiGroups: [""], resources: ["secrets"], resourceNames: ["mesh-ca-secret"], verbs: ["update"] },
  ]);
});

Deno.test("the ingress gateway: proxy flags exist, its WorkloadGroup and --labels carry the labels its Service selects", () => {
  const dep = find("Deployment", "mesh-ingressgateway");
  const c = container(dep);
  const a = args(c);
  const known = new Set(PROXY_FLAGS.map((f) => f.name));
  for (const flag of a.keys()) assert.ok(known.has(flag), `the proxy has no flag --${flag}`);
  assert.equal(a.get("type"), "router");
  assert.equal(a.get("discoveryAddress"), "meshd.mesh-system.svc:15012");
  const sa = at(dep.object, "spec.template.spec.serviceAccountName");
  assert.equal(a.get("serviceAccount"), sa);
  find("ServiceAccount", String(sa), "mesh-system");
  const group = find("WorkloadGroup", String(a.get("workloadGroup")), "mesh-system");
  assert.equal(at(group.object, "spec.template.serviceAccount"), sa);
  const flagLabels = Object.fromEntries(String(a.get("labels")).split(",").map((kv) => kv.split("=")));
  const selector = labels(find("Service", "mesh-ingressgateway").object, "spec.selector");
  assert.ok(selects(selector, flagLabels));
  assert.ok(selects(selector, labels(group.object, "spec.metadata.labels")));
  const mounts = list(c, "volumeMounts").map((m) => String(m.mountPath));
  const audiences = list(container(find("Deployment", "meshd")), "env").find((e) =>
    e.name === "TOKEN_AUDIENCES"
  );
  const token = list(dep.object, "spec.template.spec.volumes").find((v) => v.name === "token");
  const projected = list(token, "projected.sources")[0];
  assert.ok(
    String(audiences?.value).split(",").includes(String(at(projected, "serviceAccountToken.audience"))),
  );
  assert.equal(a.get("tokenFile"), `/var/run/secrets/tokens/${at(projected, "serviceAccountToken.path")}`);
  for (const f of ["tokenFile", "rootCertFile"]) {
    assert.ok(mounts.some((m) => a.get(f)?.startsWith(`${m}/`)), `--${f} is on a mounted volume`);
  }
});

Deno.test(
  requires(commandMissing("kubectl"), {
    name: "kubectl kustomize renders deploy/kubernetes into the same objects",
    async fn() {
      const out = await new Deno.Command("kubectl", {
        args: ["kustomize", MANIFESTS_DIR.pathname],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(new TextDecoder().decode(out.stderr), "");
      assert.ok(out.success);
      const rendered = new TextDecoder().decode(out.stdout).split(/^---$/m).length;
      assert.equal(rendered, docs.length);
    },
  }),
);
