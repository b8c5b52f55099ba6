import assert from "node:assert/strict";
import type { AnalysisMessage } from "./analyzers.ts";
import { runAnalysis } from "./command.ts";
import { finishInput, inputFromFiles, type RegistryzWorkload, undeclaredWorkloads } from "./input.ts";

const PA = (port: number) =>
  `apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: pa, namespace: foo}\n` +
  `spec: {selector: {matchLabels: {app: vm}}, mtls: {mode: STRICT}, portLevelMtls: {'${port}': {mode: DISABLE}}}\n`;

const DB_AND_GET_ONLY = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: foo}
spec:
  hosts: [db.foo.svc.cluster.local]
  ports: [{name: tcp-db, number: 5432, protocol: TCP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: vm}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: get-only, namespace: foo}
spec:
  selector: {matchLabels: {app: vm}}
  rules: [{to: [{operation: {methods: [GET]}}]}]
`;

const VM = (inboundMtls?: { port: number }[]): RegistryzWorkload => ({
  key: "foo/vm-10.0.0.5",
  name: "vm-10.0.0.5",
  namespace: "foo",
  labels: { app: "vm" },
  ...(inboundMtls ? { inboundMtls } : {}),
});

const CASES: [string, RegistryzWorkload[], number, string[]][] = [
  ["an auto-registered workload's unbound port", [VM([{ port: 0 }, { port: 8080 }])], 9090, ["MESH0001"]],
  ["its bound port (meshd's inboundMtls)", [VM([{ port: 0 }, { port: 8080 }])], 8080, []],
  ["an older meshd without inboundMtls: ports unknown, nothing judged", [VM()], 9090, []],
];

/** The analyzers' messages for `yaml` (one file) and meshd's registry workloads. */
async function analyze(
  yaml: string,
  workloads: RegistryzWorkload[],
  analyzer: string,
): Promise<AnalysisMessage[]> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/mesh.yaml`, yaml);
    const files = await inputFromFiles([dir], { rootNamespace: "mesh-system" });
    const input = finishInput(files.resources, {
      workloads: undeclaredWorkloads(workloads, new Set()),
      rootNamespace: "mesh-system",
      issues: [],
      target: "test",
      files: [],
    });
    return runAnalysis(input, { analyzers: [analyzer] });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const [name, workloads, port, want] of CASES) {
  Deno.test(`analyze input from meshd: ${name}`, async () => {
    const found = await analyze(PA(port), workloads, "authn.PeerAuthenticationAnalyzer");
    assert.deepEqual(found.map((m) => m.type.code), want);
  });
}

Deno.test("analyze input from meshd: workloads a WorkloadEntry declares are left to the entry", () => {
  assert.deepEqual(undeclaredWorkloads([VM([{ port: 8080 }])], new Set(["foo/vm-10.0.0.5"])), []);
});

Deno.test("analyze input from meshd: an auto-registered workload's TCP port is named after the service that selects it", async () => {
  const found = await analyze(
    DB_AND_GET_ONLY,
    [VM([{ port: 0 }, { port: 5432 }])],
    "auth.TcpHttpFieldsAnalyzer",
  );
  assert.deepEqual(found.map((m) => m.type.code), ["MESH0002"]);
  assert.match(String(found[0].params[4]), /^foo\/db port 5432 is TCP$/);
});
