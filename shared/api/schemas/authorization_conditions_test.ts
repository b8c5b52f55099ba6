import { type AuthorizationCase, err, testAuthorizationCases, W0, when } from "./_test_support.ts";

/** AuthorizationPolicy conditions (`when`): the documented keys and their values. */
const documentedKeys: [string, string[]][] = [
  ["source.ip", ["10.0.0.1", "10.0.0.0/8"]],
  ["remote.ip", ["203.0.113.7", "2001:db8::/32"]],
  ["source.namespace", ["foo"]],
  ["source.principal", ["cluster.local/ns/foo/sa/sleep"]],
  ["source.serviceAccount", ["foo/sleep", "sleep"]],
  ["source.trustDomain", ["cluster.local", "*.example.com"]],
  ["request.auth.principal", ["https://issuer.example.com/alice"]],
  ["request.auth.audiences", ["api.example.com"]],
  ["request.auth.presenter", ["client-app"]],
  ["request.auth.claims[groups]", ["group1"]],
  ["request.auth.claims[a][b]", ["nested"]],
  ["request.headers[x-token]", ["admin"]],
  ["destination.ip", ["10.0.0.2", "::1"]],
  ["destination.port", ["8080", "0", "65535"]],
  ["connection.sni", ["www.example.com"]],
];

const conditionCases: AuthorizationCase[] = [
  ...documentedKeys.map(([key, values]): AuthorizationCase => ({
    name: `condition key ${key} passes`,
    spec: when({ key, values }),
    want: [],
  })),
  {
    name: "condition with only notValues passes",
    spec: when({ key: "source.namespace", notValues: ["bar"] }),
    want: [],
  },
  {
    name: "condition needs values or notValues: neither set fails",
    spec: when({ key: "source.namespace" }),
    want: [err(W0, "a condition needs values or notValues (key source.namespace)")],
  },
  {
    name: "condition needs values or notValues: both empty lists fail",
    spec: when({ key: "request.headers[x-token]", values: [], notValues: [] }),
    want: [err(W0, "a condition needs values or notValues")],
  },
  {
    name: "condition key must not be empty",
    spec: when({ key: "", values: ["x"] }),
    want: [err([...W0, "key"], "key must not be empty")],
  },
  {
    name: "condition value must not be empty",
    spec: when({ key: "source.namespace", values: ["foo", ""] }),
    want: [err([...W0, "key"], "empty value not allowed (value 1)")],
  },
  ...["request.header[x]", "source.foo", "request.method", "destination.service", "source.ip[0]"].map(
    (key): AuthorizationCase => ({
      name: `unknown condition key ${key} fails`,
      spec: when({ key, values: ["x"] }),
      want: [err([...W0, "key"], `unknown condition key "${key}"; known keys: source.ip`)],
    }),
  ),
  {
    name: "unknown condition key: request.headers without a name fails",
    spec: when({ key: "request.headers", values: ["x"] }),
    want: [err([...W0, "key"], 'bad key "request.headers": expected request.headers[name]')],
  },
  {
    name: "unknown condition key: request.headers[] (empty name) fails",
    spec: when({ key: "request.headers[]", values: ["x"] }),
    want: [err([...W0, "key"], 'bad key "request.headers[]": expected request.headers[name]')],
  },
  {
    name: "unknown condition key: request.headers[a][b] (two names) fails",
    spec: when({ key: "request.headers[a][b]", values: ["x"] }),
    want: [err([...W0, "key"], "request.headers takes one name")],
  },
  {
    name: "unknown condition key: request.auth.claims[a]b fails",
    spec: when({ key: "request.auth.claims[a]b", values: ["x"] }),
    want: [err([...W0, "key"], "expected request.auth.claims[name]")],
  },
  {
    name: "unknown condition key: request.auth.claims without a name fails",
    spec: when({ key: "request.auth.claims", values: ["x"] }),
    want: [err([...W0, "key"], "expected request.auth.claims[name]")],
  },
  {
    name: "unsupported condition key: experimental.envoy.filters.* fails",
    spec: when({ key: "experimental.envoy.filters.network.mysql_proxy[db.table]", values: ["[update]"] }),
    want: [err([...W0, "key"], "this mesh's proxy is not Envoy")],
  },
  {
    name: "replaced condition key: destination.labels[x] fails",
    spec: when({ key: "destination.labels[x]", values: ["y"] }),
    want: [
      err(
        [...W0, "key"],
        'condition key "destination.labels[x]" is not supported: it is replaced by the workload selector',
      ),
    ],
  },
  {
    name: "replaced condition key: destination.namespace fails",
    spec: when({ key: "destination.namespace", values: ["foo"] }),
    want: [err([...W0, "key"], "it is replaced by the policy's metadata.namespace")],
  },
  {
    name: "replaced condition key: destination.name (v1alpha1) fails",
    spec: when({ key: "destination.name", values: ["foo"] }),
    want: [err([...W0, "key"], "only supported in Istio's v1alpha1 RBAC")],
  },
  {
    name: "replaced condition key: destination.user (v1alpha1) fails",
    spec: when({ key: "destination.user", values: ["foo"] }),
    want: [err([...W0, "key"], "only supported in Istio's v1alpha1 RBAC")],
  },
  ...[
    ["source.ip", "not-an-ip"],
    ["source.ip", "10.0.0.0/33"],
    ["remote.ip", "256.1.1.1"],
    ["destination.ip", "2001:db8::/129"],
    ["destination.ip", "10.0.0"],
  ].map(([key, value]): AuthorizationCase => ({
    name: `bad ip value for ${key}: "${value}" fails`,
    spec: when({ key, values: [value] }),
    want: [err([...W0, "key"], `"${value}" is not an IP address or CIDR range`)],
  })),
  ...["http", "65536", "-1", "80-90"].map((value): AuthorizationCase => ({
    name: `bad port value for destination.port: "${value}" fails`,
    spec: when({ key: "destination.port", values: [value] }),
    want: [err([...W0, "key"], `"${value}" is not a port in 0..65535`)],
  })),
  {
    name: "bad port value in notValues for destination.port fails",
    spec: when({ key: "destination.port", notValues: ["8080", "x"] }),
    want: [err([...W0, "key"], '"x" is not a port in 0..65535')],
  },
  {
    name: "bad value for source.serviceAccount: a/b/c fails",
    spec: when({ key: "source.serviceAccount", values: ["a/b/c"] }),
    want: [err([...W0, "key"], 'expected "serviceAccount" or "namespace/serviceAccount", got "a/b/c"')],
  },
  {
    name: "bad value for source.serviceAccount: * fails",
    spec: when({ key: "source.serviceAccount", values: ["*"] }),
    want: [err([...W0, "key"], "wildcards are not allowed in service accounts")],
  },
  {
    name: "bad value for source.trustDomain: wildcard in the middle fails",
    spec: when({ key: "source.trustDomain", values: ["a*b.local"] }),
    want: [err([...W0, "key"], "a wildcard is allowed only at the start or the end")],
  },
  {
    name: "a condition that is unknown and has no values reports both",
    spec: when({ key: "source.foo" }),
    want: [err(W0, "needs values or notValues"), err([...W0, "key"], 'unknown condition key "source.foo"')],
  },
];

testAuthorizationCases(conditionCases);
