import {
  allow,
  type AuthorizationCase,
  err,
  fromSource,
  OP,
  R0,
  SRC,
  testAuthorizationCases,
  toOperation,
} from "./_test_support.ts";

/** AuthorizationPolicy sources (`from`) and operations (`to`). */
const seventeen = Array.from({ length: 17 }, (_, i) => `ns/sa${i}`);

const sourceCases: AuthorizationCase[] = [
  {
    name: "source with every non-conflicting field passes",
    spec: fromSource({
      principals: ["cluster.local/ns/foo/sa/sleep"],
      notPrincipals: ["cluster.local/ns/foo/sa/evil"],
      requestPrincipals: ["*"],
      notRequestPrincipals: ["https://bad/*"],
      namespaces: ["foo"],
      notNamespaces: ["bar"],
      ipBlocks: ["10.0.0.0/8"],
      notIpBlocks: ["10.1.0.0/16"],
      remoteIpBlocks: ["203.0.113.0/24"],
      notRemoteIpBlocks: ["203.0.113.7"],
      trustDomains: ["cluster.local"],
      notTrustDomains: ["*.evil.example"],
    }),
    want: [],
  },
  ...[["principals", "cluster.local/ns/foo/sa/x"], ["namespaces", "foo"], ["notPrincipals", "x"], [
    "notNamespaces",
    "bar",
  ]].map(([field, value]): AuthorizationCase => ({
    name: `serviceAccounts cannot be combined with ${field}`,
    spec: fromSource({ serviceAccounts: ["foo/sleep"], [field]: [value] }),
    want: [err(SRC, "serviceAccounts cannot be combined with principals or namespaces")],
  })),
  {
    name: "serviceAccounts cannot be combined: notServiceAccounts with namespaces fails",
    spec: fromSource({ notServiceAccounts: ["foo/sleep"], namespaces: ["foo"] }),
    want: [err(SRC, "serviceAccounts cannot be combined with principals or namespaces")],
  },
  {
    name: "serviceAccounts combine with ipBlocks and requestPrincipals",
    spec: fromSource({ serviceAccounts: ["foo/sleep"], ipBlocks: ["10.0.0.0/8"], requestPrincipals: ["*"] }),
    want: [],
  },
  {
    name: 'serviceAccounts format: "ns/sa" and "sa" pass',
    spec: fromSource({ serviceAccounts: ["ns/sa", "sa"], notServiceAccounts: ["ns/other"] }),
    want: [],
  },
  ...["a/b/c", "/sa", "ns/"].map((sa): AuthorizationCase => ({
    name: `serviceAccounts format: "${sa}" fails`,
    spec: fromSource({ serviceAccounts: ["ok", sa] }),
    want: [
      err(
        [...SRC, "serviceAccounts", 1],
        `expected "serviceAccount" or "namespace/serviceAccount", got "${sa}"`,
      ),
    ],
  })),
  ...["*", "ns/*", "sa-*"].map((sa): AuthorizationCase => ({
    name: `serviceAccounts format: "${sa}" fails (wildcard)`,
    spec: fromSource({ serviceAccounts: [sa] }),
    want: [err([...SRC, "serviceAccounts", 0], `wildcards are not allowed in service accounts: "${sa}"`)],
  })),
  {
    name: "serviceAccounts format: longer than 320 characters fails",
    spec: fromSource({ serviceAccounts: ["ns/" + "a".repeat(320)] }),
    want: [err([...SRC, "serviceAccounts", 0], "is longer than 320 characters")],
  },
  {
    name: "serviceAccounts format: notServiceAccounts is checked too",
    spec: fromSource({ notServiceAccounts: ["a/b/c"] }),
    want: [err([...SRC, "notServiceAccounts", 0], "namespace/serviceAccount")],
  },
  {
    name: "serviceAccounts: 16 pass",
    spec: fromSource({ serviceAccounts: seventeen.slice(0, 16) }),
    want: [],
  },
  {
    name: "serviceAccounts: more than 16 fail",
    spec: fromSource({ serviceAccounts: seventeen }),
    want: [err([...SRC, "serviceAccounts"], "at most 16 service accounts are allowed")],
  },
  {
    name: "serviceAccounts: more than 16 notServiceAccounts fail",
    spec: fromSource({ notServiceAccounts: seventeen }),
    want: [err([...SRC, "notServiceAccounts"], "at most 16 service accounts are allowed")],
  },
  ...["10.0.0.0/8", "1.2.3.4", "0.0.0.0/0", "2001:db8::/32", "::1", "::ffff:10.0.0.1", "10.0.0.1/32"].map(
    (ip): AuthorizationCase => ({
      name: `ipBlocks CIDR: "${ip}" passes`,
      spec: fromSource({ ipBlocks: [ip] }),
      want: [],
    }),
  ),
  ...[
    "10.0.0.0/33",
    "256.0.0.1",
    "10.0.0",
    "01.2.3.4",
    "1.2.3.4/",
    "1.2.3.4/-1",
    "2001:db8::/129",
    "abc",
    "fe80::1%eth0",
  ]
    .map((ip): AuthorizationCase => ({
      name: `ipBlocks CIDR: "${ip}" fails`,
      spec: fromSource({ ipBlocks: [ip] }),
      want: [err([...SRC, "ipBlocks", 0], `"${ip}" is not an IP address or CIDR range`)],
    })),
  ...["::1]:80#", "::1]?x"].map((ip): AuthorizationCase => ({
    // The IPv6 check parses `http://[${text}]/`; text that closes the bracket itself must not pass.
    name: `ipBlocks CIDR: "${ip}" (bracket injection) fails`,
    spec: fromSource({ ipBlocks: [ip] }),
    want: [err([...SRC, "ipBlocks", 0], "is not an IP address or CIDR range")],
  })),
  ...(["notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks"] as const).map((field): AuthorizationCase => ({
    name: `ipBlocks CIDR: ${field} is checked too`,
    spec: fromSource({ [field]: ["10.0.0.0/8", "10.0.0.0/99"] }),
    want: [err([...SRC, field, 1], '"10.0.0.0/99" is not an IP address or CIDR range')],
  })),
  ...["cluster.local", "*.example.com", "example.*", "*"].map((td): AuthorizationCase => ({
    name: `trustDomains: "${td}" passes`,
    spec: fromSource({ trustDomains: [td] }),
    want: [],
  })),
  {
    name: 'trustDomains "/": a slash fails',
    spec: fromSource({ trustDomains: ["cluster.local/ns/foo"] }),
    want: [err([...SRC, "trustDomains", 0], 'a trust domain must not contain "/": "cluster.local/ns/foo"')],
  },
  {
    name: "trustDomains wildcard: in the middle fails",
    spec: fromSource({ trustDomains: ["a*b.local"] }),
    want: [
      err([...SRC, "trustDomains", 0], 'a wildcard is allowed only at the start or the end: "a*b.local"'),
    ],
  },
  {
    name: "trustDomains wildcard: two wildcards fail",
    spec: fromSource({ trustDomains: ["*.local*"] }),
    want: [err([...SRC, "trustDomains", 0], 'at most one wildcard is allowed: "*.local*"')],
  },
  {
    name: "trustDomains wildcard: notTrustDomains is checked too",
    spec: fromSource({ notTrustDomains: ["x/y"] }),
    want: [err([...SRC, "notTrustDomains", 0], 'must not contain "/"')],
  },
  ...(["principals", "requestPrincipals", "namespaces", "notNamespaces", "trustDomains", "ipBlocks"] as const)
    .map(
      (field): AuthorizationCase => ({
        name: `empty value in source ${field} fails`,
        spec: fromSource({ [field]: [""] }),
        want: [err([...SRC, field, 0], "empty value not allowed")],
      }),
    ),
  {
    name: "empty source {} fails",
    spec: fromSource({}),
    want: [err(SRC, "source must set at least one field")],
  },
  {
    name: "empty source: only empty lists fails",
    spec: fromSource({ principals: [], namespaces: [] }),
    want: [err(SRC, "source must set at least one field")],
  },
  {
    name: "empty from list fails",
    spec: allow({ from: [] }),
    want: [err([...R0, "from"], "from must not be empty")],
  },
  {
    name: "second source of the second rule is reported at its own path",
    spec: {
      rules: [{}, { from: [{ source: { namespaces: ["foo"] } }, { source: { ipBlocks: ["x"] } }] }],
    },
    want: [err(["spec", "rules", 1, "from", 1, "source", "ipBlocks", 0], '"x" is not an IP address')],
  },
];

const operationCases: AuthorizationCase[] = [
  {
    name: "operation with every field passes",
    spec: toOperation({
      hosts: ["example.com"],
      notHosts: ["evil.example.com"],
      ports: ["8080"],
      notPorts: ["9090"],
      methods: ["GET"],
      notMethods: ["DELETE"],
      paths: ["/api/*"],
      notPaths: ["/api/admin"],
    }),
    want: [],
  },
  {
    name: "empty operation {} fails",
    spec: toOperation({}),
    want: [err(OP, "operation must set at least one field")],
  },
  {
    name: "empty operation: only empty lists fails",
    spec: toOperation({ methods: [], paths: [] }),
    want: [err(OP, "operation must set at least one field")],
  },
  {
    name: "empty to list fails",
    spec: allow({ to: [] }),
    want: [err([...R0, "to"], "to must not be empty")],
  },
  ...["0", "80", "65535"].map((port): AuthorizationCase => ({
    name: `ports in operation: "${port}" passes`,
    spec: toOperation({ ports: [port] }),
    want: [],
  })),
  ...["http", "65536", "-1", "8080-8090", "80 "].map((port): AuthorizationCase => ({
    name: `ports in operation: "${port}" fails`,
    spec: toOperation({ ports: [port] }),
    want: [err([...OP, "ports", 0], `"${port}" is not a port in 0..65535`)],
  })),
  {
    name: "ports in operation: notPorts is checked too",
    spec: toOperation({ notPorts: ["80", "99999"] }),
    want: [err([...OP, "notPorts", 1], '"99999" is not a port in 0..65535')],
  },
  ...(["hosts", "methods", "paths", "ports"] as const).map((field): AuthorizationCase => ({
    name: `empty value in operation ${field} fails`,
    spec: toOperation({ [field]: [""] }),
    want: [err([...OP, field, 0], "empty value not allowed")],
  })),
];

testAuthorizationCases([...sourceCases, ...operationCases]);
