/**
 * The messages the agent sends to and reads from meshd, as a narrow protobufjs descriptor: the Delta
 * ADS envelope (envoy.service.discovery.v3 DeltaDiscoveryRequest / DeltaDiscoveryResponse / Resource,
 * the Node fields the agent sets, google.protobuf.Struct/Any, google.rpc.Status) and the CSR pair
 * (mesh.v1.CertificateRequest / CertificateResponse, shared/proto/mesh/v1/ca.proto). Loading only
 * these instead of the Envoy API protos through @grpc/proto-loader (thousands of types) saves about
 * 15 MiB on the isolate (README.md, "Memory"). Field numbers are Envoy's; ads_wire_test.ts checks every
 * field here against the full Envoy protos and ca.proto, so the two cannot part.
 *
 * Decoded objects have the shapes @grpc/proto-loader gave (camelCase fields, every field present,
 * 64-bit integers as numbers, enums as names, `Any` as `{type_url, value}`), so the ADS client's logic
 * did not change with the transport.
 *
 * @module
 */
import protobuf from "protobufjs";

const str = (id: number) => ({ type: "string", id });
const rep = (type: string, id: number) => ({ rule: "repeated", type, id });

/** The protobufjs JSON descriptor of the messages above (fields named as proto-loader names them). */
export const AGENT_WIRE_DESCRIPTOR: Record<string, unknown> = {
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { type_url: str(1), value: { type: "bytes", id: 2 } } },
            Struct: { fields: { fields: { keyType: "string", type: "Value", id: 1 } } },
            Value: {
              oneofs: {
                kind: {
                  oneof: ["nullValue", "numberValue", "stringValue", "boolValue", "structValue", "listValue"],
                },
              },
              fields: {
                nullValue: { type: "NullValue", id: 1 },
                numberValue: { type: "double", id: 2 },
                stringValue: str(3),
                boolValue: { type: "bool", id: 4 },
                structValue: { type: "Struct", id: 5 },
                listValue: { type: "ListValue", id: 6 },
              },
            },
            NullValue: { values: { NULL_VALUE: 0 } },
            ListValue: { fields: { values: rep("Value", 1) } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: "int32", id: 1 },
                message: str(2),
                details: rep("google.protobuf.Any", 3),
              },
            },
          },
        },
      },
    },
    envoy: {
      nested: {
        config: {
          nested: {
            core: {
              nested: {
                v3: {
                  nested: {
                    Node: {
                      fields: {
                        id: str(1),
                        cluster: str(2),
                        metadata: { type: "google.protobuf.Struct", id: 3 },
                      },
                    },
                  },
                },
              },
            },
          },
        },
        service: {
          nested: {
            discovery: {
              nested: {
                v3: {
                  nested: {
                    DeltaDiscoveryRequest: {
                      fields: {
                        node: { type: "envoy.config.core.v3.Node", id: 1 },
                        typeUrl: str(2),
                        resourceNamesSubscribe: rep("string", 3),
                        resourceNamesUnsubscribe: rep("string", 4),
                        initialResourceVersions: { keyType: "string", type: "string", id: 5 },
                        responseNonce: str(6),
                        errorDetail: { type: "google.rpc.Status", id: 7 },
                      },
                    },
                    DeltaDiscoveryResponse: {
                      fields: {
                        systemVersionInfo: str(1),
                        resources: rep("Resource", 2),
                        typeUrl: str(4),
                        removedResources: rep("string", 6),
                        nonce: str(5),
                      },
                    },
                    Resource: {
                      fields: {
                        name: str(3),
                        aliases: rep("string", 4),
                        version: str(1),
                        resource: { type: "google.protobuf.Any", id: 2 },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    mesh: {
      nested: {
        v1: {
          nested: {
            CertificateRequest: {
              fields: {
                csr: str(1),
                validityDuration: { type: "int64", id: 2 },
                metadata: { keyType: "string", type: "string", id: 3 },
              },
            },
            CertificateResponse: { fields: { certChain: rep("string", 1) } },
          },
        },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(AGENT_WIRE_DESCRIPTOR as protobuf.INamespace);

/** The message types the agent uses, by short name. */
export const WIRE_TYPES = {
  deltaRequest: root.lookupType("envoy.service.discovery.v3.DeltaDiscoveryRequest"),
  deltaResponse: root.lookupType("envoy.service.discovery.v3.DeltaDiscoveryResponse"),
  certificateRequest: root.lookupType("mesh.v1.CertificateRequest"),
  certificateResponse: root.lookupType("mesh.v1.CertificateResponse"),
} as const;

/** The ADS method path. */
export const DELTA_ADS_PATH =
  "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";
/** The CSR method path. */
export const CREATE_CERTIFICATE_PATH = "/mesh.v1.CertificateService/CreateCertificate";

// deno-lint-ignore no-explicit-any
type Message = Record<string, any>;

/**
 * Encodes a plain object as `type` (unknown fields are ignored, as proto-loader did).
 *
 * @throws Error when a value does not fit its field
 */
export function encodeWire(type: protobuf.Type, value: Message): Uint8Array {
  return type.encode(type.fromObject(value)).finish();
}

/**
 * Decodes bytes of `type` into the proto-loader shape (see the module doc).
 *
 * @throws Error when the bytes are not a message of the type
 */
export function decodeWire(type: protobuf.Type, bytes: Uint8Array): Message {
  return type.toObject(type.decode(bytes), {
    longs: Number,
    enums: String,
    defaults: true,
    arrays: true,
    objects: true,
    oneofs: true,
  });
}
