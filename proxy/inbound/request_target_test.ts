/**
 * Request targets through a real inbound listener, as raw bytes: the 62 path variants of
 * shared/policy/authorization/path_variants.ts against a DENY `paths: ["/headers"]` under each
 * `pathNormalization` option (set in the snapshot's workload settings, as meshd pushes it), to an
 * application that echoes the request line it received (what was forwarded must be what the policy
 * saw) and to real httpbin (what an application makes of it: the bypasses each option leaves open).
 * Also method case against a DENY `methods: ["DELETE"]`, and an absolute-form target's authority as
 * Host for policies and for the application.
 */
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import assert from "node:assert/strict";
import { PATH_NORMALIZATIONS, type PathNormalization } from "../../shared/mod.ts";
import { PATH_VARIANTS } from "../../shared/policy/authorization/path_variants.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { InboundListener } from "./listener.ts";
import { forwardedTarget, parseEcho, sendRaw, TargetEcho } from "./target_echo.ts";
import { Httpbin, mtlsFixture, RecordingLog, snapshotOf } from "./test_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const { cert, files } = await mtlsFixture(
  "spiffe://cluster.local/ns/foo/sa/httpbin",
  "spiffe://cluster.local/ns/foo/sa/sleep",
);
await files.remove();

const deny = (name: string, operation: Record<string, string[]>) => ({
  name,
  namespace: "foo",
  action: "DENY",
  rules: [{ to: [{ operation }] }],
});

/** A snapshot with the option and the policies the probes of issue 12 used. */
function snapshotWith(option: PathNormalization, policies = true): RuntimeSnapshot {
  const base = snapshotOf("PERMISSIVE", cert);
  const authz = [
    deny("deny-headers", { paths: ["/headers"] }),
    deny("deny-delete", { methods: ["DELETE"], paths: ["/anything"] }),
    deny("deny-evil-host", { hosts: ["evil.example"] }),
  ];
  return {
    ...base,
    workload: { ...base.workload!, settings: { ...DEFAULT_PROXY_SETTINGS, pathNormalization: option } },
    authorizations: policies ? Object.fromEntries(authz.map((a) => [`foo/${a.name}`, a])) : {},
  };
}

const get = (target: string, host = "httpbin.foo:8000") =>
  `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

async function withInbound(
  appPort: number,
  fn: (port: number, set: (s: RuntimeSnapshot) => void) => Promise<void>,
) {
  let snapshot = snapshotWith("DECODE_AND_MERGE_SLASHES");
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort,
    snapshot: () => snapshot,
    log: new RecordingLog(),
  });
  await listener.start();
  try {
    await fn(listener.port, (s) => snapshot = s);
  } finally {
    await listener.close();
  }
}

Deno.test("path variants under each option: 400, 403 exactly when the path is /headers, else forwarded as the policy saw it", async () => {
  const echo = await TargetEcho.start();
  try {
    await withInbound(echo.port, async (port, set) => {
      for (const option of PATH_NORMALIZATIONS) {
        set(snapshotWith(option));
        const failures: string[] = [];
        for (const { target, expected } of PATH_VARIANTS) {
          const want = expected[option];
          const r = await sendRaw(port, get(target));
          if (want === null || want === "/headers") {
            const status = want === null ? 400 : 403;
            if (r.status !== status) failures.push(`${target}: ${r.status} (want ${status})`);
            continue;
          }
          const line = r.status === 200 ? parseEcho(r.body).line : `status ${r.status}`;
          if (line !== `GET ${forwardedTarget(target, want)} HTTP/1.1`) {
            failures.push(`${target}: ${line} (want ${want})`);
          }
        }
        assert.deepEqual(failures, [], option);
      }
    });
  } finally {
    await echo.stop();
  }
});

/** Whether a body is httpbin's /headers answer (a JSON object with only `headers`). */
function isHeadersBody(body: string): boolean {
  try {
    return Object.keys(JSON.parse(body)).join() === "headers";
  } catch {
    return false;
  }
}

/** The variants that reach httpbin's /headers (200 with its body) under each option, as measured. */
const HTTPBIN_BYPASSES: Record<PathNormalization, string[]> = {
  // gunicorn decodes the path once and werkzeug merges slashes: what no proxy-side rule covers.
  NONE: [
    "//headers",
    "///headers",
    "/%2fheaders",
    "/%2Fheaders",
    "/%68eaders",
    "/%68%65%61%64%65%72%73",
    "http://example.com//headers",
    "/%2f%2fheaders",
  ],
  // Istio's default: `//`, `\` (made `/`) and `%2F` stay open (CVE-2021-31920).
  BASE: [
    "//headers",
    "///headers",
    "/%2fheaders",
    "/%2Fheaders",
    "/\\headers",
    "/a/..//headers",
    "/.//headers",
    "http://example.com//headers",
    "/%2f%2fheaders",
    "/\\/headers",
  ],
  MERGE_SLASHES: ["/%2fheaders", "/%2Fheaders", "/%2f%2fheaders"],
  DECODE_AND_MERGE_SLASHES: [],
};

Deno.test(requires(httpbinMissing(), {
  name:
    "path variants to real httpbin: DECODE_AND_MERGE_SLASHES (the default) leaves no bypass; the others leave Istio's",
  async fn() {
    const httpbin = await Httpbin.start();
    const direct = new Map<string, number>();
    try {
      await withInbound(httpbin.port, async (port, set) => {
        const bypasses: Record<string, string[]> = {};
        for (const option of PATH_NORMALIZATIONS) {
          set(snapshotWith(option));
          const failures: string[] = [];
          bypasses[option] = [];
          for (const { target, expected } of PATH_VARIANTS) {
            const want = expected[option];
            const r = await sendRaw(port, get(target));
            let status = want === null ? 400 : 403;
            if (want !== null && want !== "/headers") {
              // What httpbin itself answers to the target the policy saw: the proxy changed nothing else.
              const f = forwardedTarget(target, want);
              if (!direct.has(f)) direct.set(f, (await sendRaw(httpbin.port, get(f))).status);
              status = direct.get(f)!;
            }
            if (r.status !== status) failures.push(`${target}: ${r.status} (want ${status})`);
            if (r.status === 200 && isHeadersBody(r.body)) {
              bypasses[option].push(target);
            }
          }
          assert.deepEqual(failures, [], option);
        }
        assert.deepEqual(bypasses, HTTPBIN_BYPASSES);
      });
    } finally {
      await httpbin.stop();
    }
  },
}));

Deno.test(requires(httpbinMissing(), {
  name:
    "method case: delete and Delete are 400 (gunicorn would run DELETE past the DENY); extension methods pass",
  async fn() {
    const httpbin = await Httpbin.start();
    try {
      await withInbound(httpbin.port, async (port) => {
        const status = async (method: string) =>
          (await sendRaw(port, `${method} /anything HTTP/1.1\r\nHost: httpbin\r\nConnection: close\r\n\r\n`))
            .status;
        assert.equal(await status("DELETE"), 403);
        for (const m of ["delete", "Delete", "dELETE"]) assert.equal(await status(m), 400, m);
        assert.equal(await status("GET"), 200);
        assert.equal(await status("get"), 400);
        // An extension token is forwarded as it came; httpbin answers 405 for a method it lacks.
        assert.equal(await status("FROBNICATE"), 405);
        assert.equal(await status("frobnicate"), 405);
      });
    } finally {
      await httpbin.stop();
    }
  },
}));

Deno.test("absolute form: the target's authority replaces Host, for policies and for the application", async () => {
  const echo = await TargetEcho.start();
  try {
    await withInbound(echo.port, async (port, set) => {
      for (const policies of [true, false]) {
        set(snapshotWith("DECODE_AND_MERGE_SLASHES", policies));
        const r = await sendRaw(port, get("http://good.example:8000/anything?x=1", "evil.example"));
        assert.equal(r.status, 200, r.body);
        assert.deepEqual(parseEcho(r.body), {
          name: "echo",
          line: "GET /anything?x=1 HTTP/1.1",
          hosts: ["good.example:8000"],
        });
        // HTTP/1.0 without Host: the authority, not the listener's default Host as well.
        const old = await sendRaw(port, "GET http://good.example/a HTTP/1.0\r\n\r\n");
        assert.deepEqual(parseEcho(old.body).hosts, ["good.example"]);
      }
      set(snapshotWith("DECODE_AND_MERGE_SLASHES"));
      // A DENY on hosts sees the authority, not the Host header the client also sent.
      assert.equal((await sendRaw(port, get("http://evil.example/anything", "good.example"))).status, 403);
      assert.equal((await sendRaw(port, get("/anything", "evil.example"))).status, 403);
      assert.equal((await sendRaw(port, get("http://u:p@good.example/anything"))).status, 400);
    });
  } finally {
    await echo.stop();
  }
});
