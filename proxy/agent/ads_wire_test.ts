import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { envoyProtoDirs } from "../../shared/internal/xds/envoy_protos.ts";
import { AGENT_WIRE_DESCRIPTOR, decodeWire, encodeWire, WIRE_TYPES } from "./ads_wire.ts";

/** The full protos the narrow descriptor is cut from: Envoy's ADS (with its imports) and ca.proto. */
function fullRoot(): protobuf.Root {
  const root = new protobuf.Root();
  const dirs = envoyProtoDirs();
  root.resolvePath = (_origin, target) => {
    for (const d of dirs) {
      try {
        Deno.statSync(d + target);
        return d + target;
      } catch {
        // not in this folder
      }
    }
    return target;
  };
  root.loadSync("envoy/service/discovery/v3/ads.proto", { keepCase: false });
  root.loadSync(new URL("../../shared/proto/mesh/v1/ca.proto", import.meta.url).pathname, {
    keepCase: false,
  });
  root.resolveAll();
  return root;
}

/** Every message of a protobufjs namespace, by full name. */
function messages(
  ns: protobuf.NamespaceBase,
  out = new Map<string, protobuf.Type>(),
): Map<string, protobuf.Type> {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) out.set(nested.fullName, nested);
    if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) messages(nested, out);
  }
  return out;
}

Deno.test("ads_wire: every field of the narrow descriptor has the number, type and rule of the full protos", () => {
  const full = fullRoot();
  const narrow = protobuf.Root.fromJSON(AGENT_WIRE_DESCRIPTOR as protobuf.INamespace);
  narrow.resolveAll();
  const checked: string[] = [];
  for (const [name, type] of messages(narrow)) {
    const reference = full.lookupType(name);
    for (const field of type.fieldsArray) {
      // The full protos name Any's fields type_url/value (protobufjs's common Any) like the narrow one.
      const ref = reference.fields[field.name];
      assert.ok(ref, `${name}.${field.name} is not in the full protos`);
      assert.equal(field.id, ref.id, `${name}.${field.name}: number`);
      assert.equal(
        field.resolvedType?.fullName ?? field.type,
        ref.resolvedType?.fullName ?? ref.type,
        `${name}.${field.name}: type`,
      );
      assert.equal(field.repeated, ref.repeated, `${name}.${field.name}: repeated`);
      assert.equal(field.map, ref.map, `${name}.${field.name}: map`);
      checked.push(`${name}.${field.name}`);
    }
  }
  assert.ok(checked.length >= 30, `only ${checked.length} fields checked`);
});

Deno.test("ads_wire: a request as the agent sends it decodes identically with the full protos, and a response back", () => {
  const full = fullRoot();
  const request = {
    node: {
      id: "sidecar~10.1.0.3~sleep-1.foo~foo.svc.cluster.local",
      cluster: "sleep-1.foo",
      metadata: {
        fields: {
          NAMESPACE: { stringValue: "foo" },
          N: { numberValue: 2 },
          L: { listValue: { values: [{ boolValue: true }] } },
        },
      },
    },
    typeUrl: "type.googleapis.com/mesh.v1.Workload",
    resourceNamesSubscribe: ["*"],
    initialResourceVersions: { "foo/sleep-1": "v1" },
    responseNonce: "7",
    errorDetail: { code: 3, message: "bad" },
  };
  const bytes = encodeWire(WIRE_TYPES.deltaRequest, request);
  const fullType = full.lookupType("envoy.service.discovery.v3.DeltaDiscoveryRequest");
  const viaFull = fullType.toObject(fullType.decode(bytes), {
    longs: Number,
    enums: String,
    defaults: false,
  });
  assert.deepEqual(JSON.parse(JSON.stringify(viaFull)), JSON.parse(JSON.stringify(request)));

  const resType = full.lookupType("envoy.service.discovery.v3.DeltaDiscoveryResponse");
  const response = resType.encode(resType.fromObject({
    systemVersionInfo: "v9",
    typeUrl: "type.googleapis.com/mesh.v1.Service",
    nonce: "8",
    removedResources: ["foo/old"],
    resources: [{
      name: "foo/a",
      version: "1",
      resource: { type_url: "type.googleapis.com/mesh.v1.Service", value: new Uint8Array([8, 1]) },
    }],
  })).finish();
  const decoded = decodeWire(WIRE_TYPES.deltaResponse, response);
  assert.equal(decoded.systemVersionInfo, "v9");
  assert.deepEqual(decoded.removedResources, ["foo/old"]);
  assert.equal(decoded.resources[0].name, "foo/a");
  assert.equal(decoded.resources[0].resource.type_url, "type.googleapis.com/mesh.v1.Service");
  assert.deepEqual([...decoded.resources[0].resource.value], [8, 1]);
});

Deno.test("ads_wire: the CSR request as meshd's ca.proto reads it", () => {
  const full = fullRoot();
  const t = full.lookupType("mesh.v1.CertificateRequest");
  const bytes = encodeWire(WIRE_TYPES.certificateRequest, {
    csr: "PEM",
    validityDuration: 3600,
    metadata: {},
  });
  assert.deepEqual(t.toObject(t.decode(bytes), { longs: Number }), { csr: "PEM", validityDuration: 3600 });
});
