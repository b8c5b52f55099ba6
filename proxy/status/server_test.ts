/**
 * The status listener against real applications: Debian's httpbin under gunicorn for the HTTP probes
 * the kubelet would have sent, and a recording application for what the listener refuses (raw bytes:
 * unknown probe names, other paths, traversal, the request's own query and headers).
 */
import assert from "node:assert/strict";
import { Httpbin } from "../inbound/test_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { parseAppProbers } from "../../shared/internal/app_probers.ts";
import { startStatusServer } from "./server.ts";
import { rawExchange, RecordingApp, statusOf } from "./test_support.ts";

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, body: await r.text() };
}

Deno.test(requires(httpbinMissing(), {
  name:
    "status: /app-health/app/livez reflects httpbin's /status/200, /status/500 and a redirect as the kubelet",
  async fn() {
    const httpbin = await Httpbin.start();
    const probers = parseAppProbers(
      JSON.stringify({
        "/app-health/app/livez": { httpGet: { path: "/status/200", port: httpbin.port }, timeoutSeconds: 5 },
        "/app-health/app/readyz": { httpGet: { path: "/status/500", port: httpbin.port }, timeoutSeconds: 5 },
        "/app-health/app/startupz": {
          httpGet: { path: "/status/302", port: httpbin.port },
          timeoutSeconds: 5,
        },
        "/app-health/other/livez": {
          httpGet: { path: "/status/404", port: httpbin.port },
          timeoutSeconds: 5,
        },
      }),
      "ISTIO_KUBE_APP_PROBERS",
    );
    const status = startStatusServer("127.0.0.1", 0, { probers, ready: () => true });
    try {
      assert.deepEqual(await get(status.port, "/app-health/app/livez"), {
        status: 200,
        body: "the application answered 200\n",
      });
      assert.deepEqual(await get(status.port, "/app-health/app/readyz"), {
        status: 500,
        body: "the application answered 500\n",
      });
      // 3xx passes, as for the kubelet (not followed: the redirect is the application's answer).
      assert.equal((await get(status.port, "/app-health/app/startupz")).status, 200);
      // A 4xx is a failure and keeps its code.
      assert.equal((await get(status.port, "/app-health/other/livez")).status, 404);
      // And the probe follows httpbin: the same path with the app stopped fails.
      await httpbin.stop();
      const down = await get(status.port, "/app-health/app/livez");
      assert.equal(down.status, 500);
      assert.match(down.body, /^cannot reach the application: /);
    } finally {
      await status.close();
      await httpbin.stop().catch(() => {});
    }
  },
}));

Deno.test("status: only configured probes, only their path and headers reach the application (raw bytes)", async () => {
  const app = new RecordingApp();
  const probers = parseAppProbers(
    JSON.stringify({
      "/app-health/app/livez": {
        httpGet: {
          path: "/ok",
          port: app.port,
          httpHeaders: [{ name: "X-Probe", value: "1" }, { name: "Host", value: "app.local" }],
        },
      },
    }),
    "ISTIO_KUBE_APP_PROBERS",
  );
  const status = startStatusServer("127.0.0.1", 0, { probers, ready: () => false });
  const ask = (line: string, headers = "") =>
    rawExchange(status.port, `${line}\r\nHost: pod\r\n${headers}Connection: close\r\n\r\n`);
  try {
    // Unknown probe names, other containers, the application's own paths, prototype names: 404.
    for (
      const target of [
        "/app-health/app/healthz",
        "/app-health/other/livez",
        "/app-health/app/livez/extra",
        "/app-health/app",
        "/ok",
        "/status/500",
        "/app-health/__proto__/livez",
        "/app-health/app/constructor",
        "/app-health/app/livez/../../../ok",
        "/app-health/app/livez/%2e%2e/%2e%2e/%2e%2e/fail",
        "/app-health/app/livez%2f..%2f..%2fok",
        "/app-health/app/LIVEZ",
      ]
    ) {
      const answer = await ask(`GET ${target} HTTP/1.1`);
      assert.equal(statusOf(answer), 404, `${target}: ${answer}`);
    }
    assert.equal(app.seen.length, 0, "a refused request reached the application");

    // Other methods are refused before any probe.
    for (const method of ["POST", "PUT", "DELETE", "OPTIONS"]) {
      assert.equal(
        statusOf(await ask(`${method} /app-health/app/livez HTTP/1.1`, "Content-Length: 0\r\n")),
        405,
      );
    }
    assert.equal(app.seen.length, 0);

    // The configured probe: the request's query, headers and target do not travel; the configured do.
    const answer = await ask(
      "GET /app-health/app/livez?redirect=http://169.254.169.254/&path=/fail HTTP/1.1",
      "Authorization: Bearer secret\r\nX-Probe: 2\r\nCookie: a=b\r\nX-Forwarded-For: 1.2.3.4\r\n",
    );
    assert.equal(statusOf(answer), 200, answer);
    assert.equal(app.seen.length, 1);
    const seen = app.seen[0];
    assert.equal(seen.method, "GET");
    assert.equal(seen.target, "/ok");
    assert.equal(seen.headers.get("x-probe"), "1");
    assert.equal(seen.headers.get("host"), "app.local");
    assert.equal(seen.headers.get("user-agent"), "kube-probe/mesh");
    for (const h of ["authorization", "cookie", "x-forwarded-for"]) {
      assert.equal(seen.headers.get(h), null, h);
    }

    // /healthz/ready follows the proxy's state.
    assert.equal(statusOf(await ask("GET /healthz/ready HTTP/1.1")), 503);
  } finally {
    await status.close();
    await app.close();
  }
});

Deno.test("status: concurrent requests for one probe share one check of the application", async () => {
  const app = new RecordingApp();
  const probers = parseAppProbers(
    JSON.stringify({ "/app-health/app/readyz": { httpGet: { path: "/slow", port: app.port } } }),
    "ISTIO_KUBE_APP_PROBERS",
  );
  const status = startStatusServer("127.0.0.1", 0, { probers, ready: () => true });
  try {
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => get(status.port, "/app-health/app/readyz")),
    );
    assert.ok(answers.every((a) => a.status === 200));
    assert.equal(app.seen.length, 1, `the application got ${app.seen.length} probes for 20 requests`);
    // A later request makes a new check.
    await get(status.port, "/app-health/app/readyz");
    assert.equal(app.seen.length, 2);
  } finally {
    await status.close();
    await app.close();
  }
});
