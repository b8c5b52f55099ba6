import assert from "node:assert/strict";
import { gatewayRouteConfigurations } from "./gateway_routes.ts";
import { credentialNamesOf } from "./server_tls.ts";
import { gw, INGRESS, vs } from "./_test_support.ts";

// Istio's "Secure Gateways" task: SIMPLE for httpbin and helloworld on 443, MUTUAL, httpsRedirect.
const SECURE_GW = gw(
  "mesh-system",
  "mygateway",
  `{selector: {istio: ingressgateway}, servers: [
     {port: {number: 443, name: https-httpbin, protocol: HTTPS}, hosts: [httpbin.example.com],
      tls: {mode: SIMPLE, credentialName: httpbin-credential, minProtocolVersion: TLSV1_3}},
     {port: {number: 443, name: https-helloworld, protocol: HTTPS}, hosts: [helloworld.example.com],
      tls: {mode: MUTUAL, credentialName: helloworld-credential}},
     {port: {number: 80, name: http, protocol: HTTP}, hosts: [httpbin.example.com], tls: {httpsRedirect: true}},
     {port: {number: 8443, name: pass, protocol: HTTPS}, hosts: ["*"], tls: {mode: PASSTHROUGH}},
     {port: {number: 8444, name: istio, protocol: HTTPS}, hosts: ["*"], tls: {mode: ISTIO_MUTUAL}},
     {port: {number: 8445, name: files, protocol: HTTPS}, hosts: ["*"],
      tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem}},
     {port: {number: 8446, name: missing, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: nope}},
     {port: {number: 8447, name: noca, protocol: HTTPS}, hosts: ["*"], tls: {mode: MUTUAL, credentialName: httpbin-credential}},
     {port: {number: 80, name: https-on-80, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: httpbin-credential}}]}`,
);
const SECURE_VS = vs(
  "default",
  "httpbin",
  `{hosts: [httpbin.example.com], gateways: [mesh-system/mygateway], http: [
     {match: [{uri: {prefix: /status}}], route: [{destination: {port: {number: 8000}, host: httpbin}}]}]}`,
);
// What the workload's namespace holds: helloworld's CA comes from helloworld-credential-cacert.
const SECRETS: Record<string, { certificate: boolean; ca: boolean }> = {
  "httpbin-credential": { certificate: true, ca: false },
  "helloworld-credential": { certificate: true, ca: false },
  "helloworld-credential-cacert": { certificate: false, ca: true },
};

Deno.test("gatewayRouteConfigurations: HTTPS servers get Istio's https.<port>.<name>.<gw>.<ns> with TLS", () => {
  const skipped: string[] = [];
  const rcs = gatewayRouteConfigurations(INGRESS, { gateways: [SECURE_GW], virtualServices: [SECURE_VS] }, {
    targetPortOf: (p) => (p === 443 ? 8443 : undefined),
    credentialOf: (name) => SECRETS[name],
    onSkip: (s) => skipped.push(`${s.gateway} servers[${s.server}] ${s.port}: ${s.reason}`),
  });
  assert.deepEqual(rcs.map((rc) => [rc.name, rc.bindPort]), [
    ["http.80", 80],
    ["https.443.https-helloworld.mygateway.mesh-system", 8443],
    ["https.443.https-httpbin.mygateway.mesh-system", 8443],
  ]);
  const [http, hello, httpbin] = rcs;
  assert.deepEqual(http.virtualHosts.map((v) => [v.name, v.httpsRedirect, v.routes.length]), [
    ["httpbin.example.com:80", true, 1],
  ]);
  assert.deepEqual(httpbin.tls, {
    mode: "SIMPLE",
    sniHosts: ["httpbin.example.com"],
    credentialName: "kubernetes://httpbin-credential",
    caCredentialName: "",
    minProtocolVersion: "TLSV1_3",
    maxProtocolVersion: "",
    subjectAltNames: [],
  });
  assert.deepEqual(httpbin.virtualHosts.map((v) => `${v.name} ${v.routes.map((r) => r.name)}`), [
    "httpbin.example.com:443 default/httpbin.0",
  ]);
  assert.equal(hello.tls?.mode, "MUTUAL");
  assert.equal(hello.tls?.caCredentialName, "kubernetes://helloworld-credential-cacert");
  assert.deepEqual(hello.virtualHosts, []);
  assert.deepEqual(credentialNamesOf(rcs), [
    "kubernetes://helloworld-credential",
    "kubernetes://helloworld-credential-cacert",
    "kubernetes://httpbin-credential",
  ]);
  assert.deepEqual(skipped, [
    "mesh-system/mygateway servers[4] 8444: tls.mode ISTIO_MUTUAL is not supported (SIMPLE, MUTUAL and PASSTHROUGH only)",
    "mesh-system/mygateway servers[5] 8445: certificates from files (serverCertificate, tlsCertificates) " +
    "are not supported; use credentialName",
    "mesh-system/mygateway servers[6] 8446: credentialName nope: no Secret nope with a certificate and key " +
    "in the gateway workload's namespace",
    "mesh-system/mygateway servers[7] 8447: MUTUAL needs a client CA: no Secret httpbin-credential-cacert " +
    "with ca.crt or cacert, and no ca.crt in httpbin-credential",
    "mesh-system/mygateway servers[3] 8443: PASSTHROUGH: no VirtualService bound to this Gateway has a tls rule whose sniHosts are among the server's hosts",
    "mesh-system/mygateway servers[8] 80: port 80 also has plain-text HTTP servers; one port cannot serve both",
  ]);
});
