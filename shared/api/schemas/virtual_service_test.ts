import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { type Finding, formatFieldPath } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { virtualService } from "./virtual_service.ts";
import {
  atGateway,
  type Case,
  fwd,
  http,
  matching,
  sni,
  testCases,
  tls,
  to,
} from "./virtual_service/_test_support.ts";

const show = (f: Finding): string => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`;

/** VirtualService rules on the schema, hosts, delegates and exportTo. */
const cases: Case[] = [
  // Schema
  {
    name: "schema: unknown rule field",
    spec: fwd({ routes: [] }),
    want: { path: "spec.http[0].routes", message: "unknown field" },
  },
  {
    name: "schema: destination host is required",
    spec: http({ route: [{ destination: { subset: "v1" } }] }),
    want: { path: "spec.http[0].route[0].destination.host", message: "required" },
  },
  {
    name: "schema: destination port number is required",
    spec: http({ route: [to("reviews", { destination: { host: "reviews", port: {} } })] }),
    want: { path: "spec.http[0].route[0].destination.port.number", message: "required" },
  },
  {
    name: "schema: destination port range",
    spec: http({ route: [{ destination: { host: "reviews", port: { number: 0 } } }] }),
    want: { path: "spec.http[0].route[0].destination.port.number", message: "greater or equal to 1" },
  },
  {
    name: "schema: match port range",
    spec: matching({ port: 70000 }),
    want: { path: "spec.http[0].match[0].port", message: "less or equal to 65535" },
  },
  {
    name: "schema: directResponse status is required",
    spec: http({ directResponse: { body: { string: "x" } } }),
    want: { path: "spec.http[0].directResponse.status", message: "required" },
  },
  {
    name: "schema: derivePort enum",
    spec: http({ redirect: { derivePort: "FROM_HEADER" } }),
    want: { path: "spec.http[0].redirect.derivePort", message: "must be one of FROM_PROTOCOL_DEFAULT" },
  },
  {
    name: "schema: TLS route match is required",
    spec: tls({ route: [to("login")] }),
    want: { path: "spec.tls[0].match", message: "required" },
  },
  {
    name: "schema: TLS match sniHosts is required",
    spec: tls({ match: [{ port: 443 }], route: [to("login")] }),
    want: { path: "spec.tls[0].match[0].sniHosts", message: "required" },
  },
  // Hosts and delegates
  { name: "hosts: short name ok", spec: fwd({}) },
  { name: "hosts: IP ok", spec: fwd({}, { hosts: ["10.0.0.1"] }) },
  {
    name: "hosts: invalid",
    spec: fwd({}, { hosts: ["foo_bar.example.com"] }),
    want: { path: "spec.hosts[0]", message: 'label "foo_bar" invalid' },
  },
  {
    name: "hosts: * not for the mesh",
    spec: fwd({}, { hosts: ["*"] }),
    want: { path: "spec.hosts[0]", message: "not allowed for a VirtualService bound to the mesh" },
  },
  {
    name: "hosts: * not when bound to mesh and a gateway",
    spec: fwd({}, { hosts: ["*"], gateways: ["mesh", "ns/gw"] }),
    want: { path: "spec.hosts[0]", message: "bound to the mesh" },
  },
  { name: "hosts: * ok at a gateway", spec: fwd({}, { hosts: ["*"], ...atGateway }) },
  {
    name: "hosts: overlapping",
    spec: fwd({}, { hosts: ["*.foo.com", "a.foo.com"] }),
    want: { path: "spec.hosts[1]", message: "duplicate hosts in virtual service: *.foo.com & a.foo.com" },
  },
  { name: "delegate: no hosts ok", spec: fwd({}, { hosts: undefined }) },
  {
    name: "delegate: no gateways",
    spec: fwd({}, { hosts: [], ...atGateway }),
    want: { path: "spec.gateways", message: "delegate VirtualService (no hosts) must not have gateways" },
  },
  {
    name: "delegate: no tls routes",
    spec: { tls: [sni("a.com")] },
    want: { path: "spec.tls", message: "cannot have tls routes" },
  },
  {
    name: "delegate: no tcp routes",
    spec: { tcp: [{ route: [to("db")] }] },
    want: { path: "spec.tcp", message: "cannot have tcp routes" },
  },
  {
    name: "rules: at least one of http, tls, tcp",
    spec: { hosts: ["reviews"] },
    want: { path: "spec", message: "at least one of http, tls, tcp" },
  },
  // exportTo
  {
    name: "exportTo: ~ not for a VirtualService",
    spec: fwd({}, { exportTo: ["~"] }),
    want: { path: "spec.exportTo[0]", message: "only allowed for a ServiceEntry" },
  },
];

testCases(cases);

/** The VirtualService of Istio's authentication task, and examples from istio.io's reference. */
const ISTIO_EXAMPLES = [
  new URL("../../../tests/fixtures/istio/authn-policy/06_httpbin_gateway_foo.yaml", import.meta.url),
  `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews-route
spec:
  hosts:
  - reviews.prod.svc.cluster.local
  http:
  - name: "reviews-v2-routes"
    match:
    - uri:
        prefix: "/wpcatalog"
    - uri:
        prefix: "/consumercatalog"
    rewrite:
      uri: "/newcatalog"
    route:
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v2
  - name: "reviews-v1-route"
    route:
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v1
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews-route-weights
spec:
  hosts:
  - reviews.prod.svc.cluster.local
  http:
  - route:
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v2
      weight: 25
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v1
      weight: 75
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings-route
spec:
  hosts:
  - ratings.prod.svc.cluster.local
  http:
  - match:
    - headers:
        end-user:
          exact: jason
      uri:
        prefix: "/ratings/v2/"
      ignoreUriCase: true
    route:
    - destination:
        host: ratings.prod.svc.cluster.local
    fault:
      delay:
        percentage:
          value: 0.1
        fixedDelay: 5s
    retries:
      attempts: 3
      perTryTimeout: 2s
      retryOn: gateway-error,connect-failure,refused-stream
    timeout: 10s
    corsPolicy:
      allowOrigins:
      - exact: https://example.com
      allowMethods:
      - POST
      - GET
      allowCredentials: false
      allowHeaders:
      - X-Foo-Bar
      maxAge: "24h"
    headers:
      request:
        set:
          test: "true"
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings-redirect
spec:
  hosts:
  - ratings.prod.svc.cluster.local
  http:
  - match:
    - uri:
        exact: /v1/getProductRatings
    redirect:
      uri: /v1/bookRatings
      authority: newratings.default.svc.cluster.local
  - match:
    - uri:
        prefix: /unknown
    directResponse:
      status: 503
      body:
        string: "unknown path"
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: httpbin-mirror
spec:
  hosts:
  - httpbin
  http:
  - route:
    - destination:
        host: httpbin
        subset: v1
      weight: 100
    mirror:
      host: httpbin
      subset: v2
    mirrorPercentage:
      value: 100.0
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: bookinfo-sni
spec:
  hosts:
  - "*.bookinfo.com"
  gateways:
  - mygateway
  tls:
  - match:
    - port: 443
      sniHosts:
      - login.bookinfo.com
    route:
    - destination:
        host: login.prod.svc.cluster.local
  - match:
    - port: 443
      sniHosts:
      - reviews.bookinfo.com
    route:
    - destination:
        host: reviews.prod.svc.cluster.local
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: bookinfo-mongo
spec:
  hosts:
  - mongo.prod.svc.cluster.local
  tcp:
  - match:
    - port: 27017
    route:
    - destination:
        host: mongo.backup.svc.cluster.local
        port:
          number: 5555
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: bookinfo
spec:
  hosts:
  - "bookinfo.com"
  gateways:
  - mygateway
  http:
  - match:
    - uri:
        prefix: "/productpage"
    delegate:
       name: productpage
       namespace: nsa
  - match:
    - uri:
        prefix: "/reviews"
    delegate:
        name: reviews
        namespace: nsb
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: productpage
  namespace: nsa
spec:
  http:
  - match:
     - uri:
        prefix: "/productpage/v1/"
    route:
    - destination:
        host: productpage-v1.nsa.svc.cluster.local
  - route:
    - destination:
        host: productpage.nsa.svc.cluster.local
`,
];

for (const source of ISTIO_EXAMPLES) {
  const text = typeof source === "string" ? source : Deno.readTextFileSync(source);
  for (const doc of parseAllDocuments(text)) {
    const resource = doc.toJS();
    if (resource.kind !== "VirtualService") continue;
    Deno.test(`VirtualService: Istio example ${resource.metadata.name} is clean`, () => {
      assert.deepEqual(validateResource(virtualService, resource).map(show), []);
    });
  }
}
