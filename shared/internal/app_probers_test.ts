import assert from "node:assert/strict";
import { parseAppProbers, proberPath } from "./app_probers.ts";

const ENV = "ISTIO_KUBE_APP_PROBERS";

Deno.test("parseAppProbers: Istio's shape, the kubelet's leading slash and default scheme", () => {
  const text = JSON.stringify({
    "/app-health/app/livez": { httpGet: { path: "status/200", port: 8080 }, timeoutSeconds: 2 },
    "/app-health/app/readyz": { tcpSocket: { port: 8080 } },
    "/app-health/grpc-app/startupz": { grpc: { port: 9090, service: "" } },
  });
  assert.deepEqual(parseAppProbers(text, ENV), {
    "/app-health/app/livez": {
      httpGet: { path: "/status/200", port: 8080, scheme: "HTTP" },
      timeoutSeconds: 2,
    },
    "/app-health/app/readyz": { tcpSocket: { port: 8080 } },
    "/app-health/grpc-app/startupz": { grpc: { port: 9090, service: "" } },
  });
  assert.equal(proberPath("app", "startupProbe"), "/app-health/app/startupz");
});

const REFUSED: [unknown, RegExp][] = [
  [{ "/app-health/app/health": { tcpSocket: { port: 1 } } }, /"\/app-health\/app\/health": must be/],
  [{ "/app-health/../livez": { tcpSocket: { port: 1 } } }, /must be \/app-health\/<container>/],
  [{ "/app-health/app/livez": {} }, /livez: must have exactly one of httpGet, tcpSocket, grpc/],
  [
    { "/app-health/app/livez": { httpGet: { path: "/", port: "http" } } },
    /httpGet\.port: must be a port number/,
  ],
  [
    { "/app-health/app/livez": { httpGet: { path: "/ HTTP/1.1\r\nX: y", port: 1 } } },
    /httpGet\.path: .*visible ASCII/,
  ],
  [
    { "/app-health/app/livez": { httpGet: { path: "/", port: 1, host: "169.254.169.254" } } },
    /httpGet\.host: only the pod's own loopback/,
  ],
  [
    { "/app-health/app/livez": { tcpSocket: { port: 22, host: "10.0.0.1" } } },
    /tcpSocket\.host: only the pod's own loopback/,
  ],
  [
    {
      "/app-health/app/livez": {
        httpGet: { path: "/", port: 1, httpHeaders: [{ name: "X", value: "a\r\nB: c" }] },
      },
    },
    /httpHeaders\[0\]\.value: must be a string without CR, LF or NUL/,
  ],
  [
    {
      "/app-health/app/livez": {
        httpGet: { path: "/", port: 1, httpHeaders: [{ name: "X Y", value: "a" }] },
      },
    },
    /httpHeaders\[0\]\.name: must be an HTTP header name/,
  ],
  [
    { "/app-health/app/livez": { httpGet: { path: "/", port: 1, scheme: "FTP" } } },
    /scheme: must be HTTP or HTTPS/,
  ],
  [{ "/app-health/app/livez": { tcpSocket: { port: 1 }, timeoutSeconds: 0 } }, /timeoutSeconds: must be/],
  [[1], /must be a JSON object/],
];

for (const [doc, want] of REFUSED) {
  Deno.test(`parseAppProbers refuses ${JSON.stringify(doc).slice(0, 90)}`, () => {
    assert.throws(() => parseAppProbers(JSON.stringify(doc), ENV), (e: Error) => {
      assert.ok(e.message.startsWith(`${ENV}: `), e.message);
      assert.match(e.message, want);
      return true;
    });
  });
}

Deno.test("parseAppProbers: text that is not JSON names the variable", () => {
  assert.throws(() => parseAppProbers("{", ENV), /^Error: ISTIO_KUBE_APP_PROBERS: not JSON/);
});
