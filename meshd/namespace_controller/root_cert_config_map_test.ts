import assert from "node:assert/strict";
import {
  type ConfigMap,
  publishesTo,
  ROOT_CERT_CONFIG_MAP,
  ROOT_CERT_KEY,
  rootCertAction,
} from "./root_cert_config_map.ts";

const ROOTS = "-----BEGIN CERTIFICATE-----\nMII…new\n-----END CERTIFICATE-----\n";

Deno.test("publishesTo: every namespace but Kubernetes' own, terminating ones and those MESH_WATCH_NAMESPACE leaves out", () => {
  const cases: [string, string, string | undefined, boolean][] = [
    ["foo", "", "Active", true],
    ["mesh-system", "", undefined, true],
    ["default", "", "Active", true],
    ["kube-system", "", "Active", false],
    ["kube-public", "", "Active", false],
    ["kube-node-lease", "", "Active", false],
    ["local-path-storage", "", "Active", false],
    ["foo", "", "Terminating", false],
    ["foo", "foo", "Active", true],
    ["bar", "foo", "Active", false],
    ["kube-system", "kube-system", "Active", false],
  ];
  for (const [ns, watch, phase, want] of cases) {
    assert.equal(publishesTo(ns, watch, phase), want, `${ns} (watch "${watch}", ${phase})`);
  }
});

Deno.test("rootCertAction: create when missing, update only root-cert.pem when it differs, none when it holds the roots", () => {
  assert.deepEqual(rootCertAction("foo", undefined, ROOTS), {
    kind: "create",
    body: {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: ROOT_CERT_CONFIG_MAP, namespace: "foo", labels: { "mesh.io/config": "true" } },
      data: { [ROOT_CERT_KEY]: ROOTS },
    },
  });
  const edited: ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: ROOT_CERT_CONFIG_MAP,
      namespace: "foo",
      resourceVersion: "42",
      labels: { team: "a" },
      annotations: { note: "x" },
    },
    data: { [ROOT_CERT_KEY]: "tampered", extra: "kept" },
  };
  const update = rootCertAction("foo", edited, ROOTS);
  assert.equal(update.kind, "update");
  assert.deepEqual(update.kind === "update" && update.body, {
    ...edited,
    data: { [ROOT_CERT_KEY]: ROOTS, extra: "kept" },
  });
  // The resourceVersion goes back: a concurrent change is refused (409), not overwritten.
  assert.equal(update.kind === "update" && update.body.metadata?.resourceVersion, "42");
  assert.equal(rootCertAction("foo", { ...edited, data: undefined }, ROOTS).kind, "update");
  assert.deepEqual(rootCertAction("foo", { ...edited, data: { [ROOT_CERT_KEY]: ROOTS } }, ROOTS), {
    kind: "none",
  });
});
