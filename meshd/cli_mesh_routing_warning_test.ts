import assert from "node:assert/strict";
import { discovery } from "./cli_test_support.ts";

// A tcp rule bound to mesh with a subset (no DestinationRules) and a match with destinationSubnets:
// sidecars leave both out, and meshd says so once each (scope model).
const CONFIG = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tcp-echo, namespace: foo}
spec:
  hosts: [tcp-echo.foo.svc.cluster.local]
  ports: [{name: tcp, number: 9000, protocol: TCP}]
  resolution: STATIC
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tcp-echo, namespace: foo}
spec:
  hosts: [tcp-echo]
  tcp:
  - match: [{port: 9000, destinationSubnets: [10.0.0.0/8]}]
    route: [{destination: {host: tcp-echo, port: {number: 9000}}}]
  - route: [{destination: {host: tcp-echo, subset: v1, port: {number: 9000}}}]
`;

Deno.test("discovery: the parts of a VirtualService tcp rule that sidecars leave out are warned once (scope model)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/vs.yaml`, CONFIG);
    const r = await discovery(["--configDir", dir]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n").filter((l) => l.includes("\twarn\tmodel\t"));
    assert.equal(lines.length, 2, r.out);
    assert.match(
      lines[0],
      /VirtualService foo\/tcp-echo spec\.tcp\[0\]\.match\[0\]\.destinationSubnets is not supported/,
    );
    assert.match(
      lines[1],
      /VirtualService foo\/tcp-echo spec\.tcp\[1\]: destination tcp-echo subset v1 needs a DestinationRule/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
