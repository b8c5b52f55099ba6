import assert from "node:assert/strict";
import { runAnalysis } from "./command.ts";
import { finishInput, inputFromFiles, type RegistryzWorkload, undeclaredWorkloads } from "./input.ts";

const PA = (port: number) =>
  `apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: pa, namespace: foo}\n` +
  `spec: {selector: {matchLabels: {app: vm}}, mtls: {mode: STRICT}, portLevelMtls: {'${port}': {mode: DISABLE}}}\n`;

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

for (const [name, workloads, port, want] of CASES) {
  Deno.test(`analyze input from meshd: ${name}`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/pa.yaml`, PA(port));
      const files = await inputFromFiles([dir], { rootNamespace: "mesh-system" });
      const input = finishInput(files.resources, {
        workloads: undeclaredWorkloads(workloads, new Set()),
        rootNamespace: "mesh-system",
        issues: [],
        target: "test",
        files: [],
      });
      assert.deepEqual(
        runAnalysis(input, { analyzers: ["authn.PeerAuthenticationAnalyzer"] }).map((m) => m.type.code),
        want,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("analyze input from meshd: workloads a WorkloadEntry declares are left to the entry", () => {
  assert.deepEqual(undeclaredWorkloads([VM([{ port: 8080 }])], new Set(["foo/vm-10.0.0.5"])), []);
});
