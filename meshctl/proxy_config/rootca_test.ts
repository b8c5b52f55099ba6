/**
 * rootca-compare and ecds: the pure parts (ROOTCA of a dump, bundles sharing a certificate, the ECDS
 * table), and rootca-compare live over loopback: two proxies of one meshd match; a proxy whose
 * certificate comes from a second meshd (another CA) does not, and meshctl exits 1 with istioctl's line.
 */
import assert from "node:assert/strict";
import {
  freePort,
  type LiveMeshd,
  type LiveProxy,
  meshctl,
  startLiveMeshd,
  startLiveProxy,
} from "../test_support.ts";
import { DUMP_TYPES } from "./sections.ts";
import {
  ECDS_DUMP_TYPE,
  ecdsDump,
  ecdsTable,
  rootCaPem,
  rootCaReport,
  rootCasShareCertificate,
} from "./rootca.ts";

const secretsDump = (pem: string | undefined) => ({
  configs: [{
    "@type": DUMP_TYPES.secrets,
    dynamic_active_secrets: pem === undefined
      ? []
      : [{ name: "ROOTCA", secret: { validation_context: { trusted_ca: { inline_string: pem } } } }],
  }],
});

Deno.test("rootCaPem: the ROOTCA secret, or istioctl's error naming the proxy", () => {
  assert.equal(rootCaPem(secretsDump("PEM"), "proxy a.foo"), "PEM");
  assert.throws(
    () => rootCaPem(secretsDump(undefined), "proxy a.foo"),
    /^Error: proxy a\.foo: cannot find ROOTCA from secret$/,
  );
});

Deno.test("rootCasShareCertificate: unparsable PEM names its side", () => {
  const bad = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  assert.throws(
    () => rootCasShareCertificate({ pem: "junk", what: "proxy a.foo" }, { pem: bad, what: "proxy b.foo" }),
    /proxy a\.foo: failed to parse certificates: no PEM certificate in ROOTCA/,
  );
  assert.throws(
    () => rootCasShareCertificate({ pem: bad, what: "proxy a.foo" }, { pem: bad, what: "proxy b.foo" }),
    /proxy a\.foo: failed to parse certificate: /,
  );
  assert.match(
    rootCaReport("a.foo", "b.bar", false),
    /^Both \[a\.foo\] and \[b\.bar\] have the non identical ROOTCA/,
  );
});

Deno.test("ecds: empty without a section ({}; header only); entries sorted by type, then name", () => {
  assert.deepEqual(ecdsDump(secretsDump(undefined)), {});
  assert.equal(ecdsTable(secretsDump(undefined)), "ECDS NAME   TYPE\n");
  const filter = (name: string, type: string) => ({
    ecds_filter: { name, typed_config: { "@type": `type.googleapis.com/${type}` } },
  });
  const dump = {
    configs: [{
      "@type": ECDS_DUMP_TYPE,
      ecds_filters: [filter("z", "b.Wasm"), filter("y", "a.Rbac"), filter("x", "b.Wasm")],
    }],
  };
  assert.equal(ecdsDump(dump).ecds_filters?.length, 3);
  assert.equal(
    ecdsTable(dump),
    "ECDS NAME   TYPE\ny           a.Rbac\nx           b.Wasm\nz           b.Wasm\n",
  );
});

Deno.test("rootca-compare live: same meshd matches; a proxy certified by another meshd does not (exit 1)", async () => {
  const meshds: LiveMeshd[] = [];
  const proxies: LiveProxy[] = [];
  const config = ["a", "b", "c"].map((n, i) =>
    `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: ${n}, namespace: foo}
spec: {address: 10.9.0.${i + 2}, labels: {app: ${n}}, serviceAccount: ${n}}
`
  ).join("---\n");
  try {
    meshds.push(await startLiveMeshd(config), await startLiveMeshd(""));
    const [main, other] = meshds;
    const who = (name: string, i: number, ca?: LiveMeshd) => ({
      namespace: "foo",
      name,
      serviceAccount: name,
      ip: `10.9.0.${i + 2}`,
      inbound: [freePort()],
      ...(ca ? { ca } : {}),
    });
    proxies.push(
      ...await Promise.all([
        startLiveProxy(main, who("a", 0)),
        startLiveProxy(main, who("b", 1)),
        startLiveProxy(main, who("c", 2, other)),
      ]),
    );
    const ctl = (args: string[]) => meshctl([...args, "--debug-address", main.debugAddress]);
    const same = await ctl(["proxy-config", "rootca-compare", "a.foo", "pod/b.foo"]);
    assert.equal(same.code, 0, same.err);
    assert.equal(
      same.out,
      "Both [a.foo] and [b.foo] have the identical ROOTCA, theoretically the connectivity between them is available\n",
    );
    const foreign = await ctl(["pc", "rc", "a", "c", "-n", "foo"]);
    assert.equal(foreign.code, 1, foreign.out);
    assert.equal(
      foreign.err,
      "error: Both [a.foo] and [c.foo] have the non identical ROOTCA, theoretically the connectivity between them is unavailable\n",
    );
    const missing = await ctl(["pc", "rootca-compare", "a.foo"]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /missing required argument 'target-2'/);
  } finally {
    await Promise.all(proxies.map((p) => p.stop()));
    await Promise.all(meshds.map((m) => m.stop()));
  }
});
