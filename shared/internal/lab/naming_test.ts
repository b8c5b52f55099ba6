import assert from "node:assert/strict";
import { belongsToLab, labNames, serviceAddress, workloadAddress, workloadNetns } from "./naming.ts";

Deno.test("labNames: names and addresses derived from the lab name and /24", () => {
  const lab = labNames("qs", "10.250.3.0/24");
  assert.deepEqual(lab, {
    name: "qs",
    prefix: "10.250.3",
    subnet: "10.250.3.0/24",
    hub: "qs_hub",
    meshd: "qs_meshd",
  });
  assert.equal(workloadNetns(lab, "foo", "httpbin"), "qs_foo_httpbin");
  assert.equal(workloadAddress(lab, 0), "10.250.3.3");
  assert.equal(workloadAddress(lab, 124), "10.250.3.127");
  assert.throws(() => workloadAddress(lab, 125), /at most 125 workloads/);
  assert.equal(serviceAddress(lab, 0), "10.250.3.128");
  assert.throws(() => serviceAddress(lab, 127), /at most 127 services/);
});

Deno.test("labNames: bad names and subnets are errors naming the value", () => {
  for (const name of ["", "Qs", "1lab", "a_b", "x".repeat(25)]) {
    assert.throws(() => labNames(name, "10.0.0.0/24"), new RegExp(`lab name ${JSON.stringify(name)}`));
  }
  for (const subnet of ["10.0.0.0/16", "10.0.0.1/24", "300.0.0.0/24", "10.0.0.0"]) {
    assert.throws(() => labNames("a", subnet), /must be an IPv4 \/24/);
  }
});

Deno.test("belongsToLab: by the name prefix and its separator only", () => {
  assert.equal(belongsToLab("qs_hub", "qs"), true);
  assert.equal(belongsToLab("qs_foo_sleep", "qs"), true);
  assert.equal(belongsToLab("qs2_hub", "qs"), false);
  assert.equal(belongsToLab("qs-a_hub", "qs"), false);
});
