import assert from "node:assert/strict";
import { testLogger } from "../logging/test_support.ts";
import { serveCtrlz } from "./ctrlz.ts";

/** ctrlz on a free loopback port over a real logger; `fn` gets a request function and the logger. */
async function withCtrlz(
  fn: (call: (path: string, body?: string) => Promise<{ status: number; json: unknown }>) => Promise<void>,
): Promise<void> {
  const logger = testLogger();
  const server = serveCtrlz(logger, { address: "localhost", port: 0 });
  try {
    await fn(async (path, body) => {
      const r = await fetch(`http://127.0.0.1:${server.addr.port}${path}`, {
        method: body === undefined ? "GET" : "PUT",
        body,
      });
      return { status: r.status, json: await r.json() };
    });
  } finally {
    await server.shutdown();
  }
}

Deno.test("ctrlz: PUT /scopej/<scope> changes the fields it carries; GET shows them", async () => {
  await withCtrlz(async (call) => {
    const put = await call("/scopej/ads", JSON.stringify({ output_level: "debug", log_callers: true }));
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, {
      name: "ads",
      output_level: "debug",
      stack_trace_level: "none",
      log_callers: true,
    });
    const back = await call(
      "/scopej/ads",
      JSON.stringify({ stack_trace_level: "error", log_callers: "yes" }),
    );
    assert.deepEqual(back.json, {
      name: "ads",
      output_level: "debug",
      stack_trace_level: "error",
      log_callers: true,
    });
    const all = await call("/scopej/");
    assert.ok(
      Array.isArray(all.json) && all.json.some((s) => s.name === "ads" && s.output_level === "debug"),
    );
  });
});

Deno.test("ctrlz: a bad scope is 404, a bad body or level 400 with the reason; nothing changes", async () => {
  await withCtrlz(async (call) => {
    assert.deepEqual(await call("/scopej/nope", "{}"), {
      status: 404,
      json: { error: 'unknown scope "nope"' },
    });
    for (
      const [body, error] of [
        ["{", "the body must be JSON"],
        ["null", "the body must be a JSON object"],
        ["[]", "the body must be a JSON object"],
        [
          '{"output_level": "loud"}',
          'output_level: unknown level "loud"; levels: debug, info, warn, error, fatal, none',
        ],
        ['{"output_level": "debug", "stack_trace_level": 3}', "stack_trace_level: unknown level"],
      ]
    ) {
      const r = await call("/scopej/ads", body);
      assert.equal(r.status, 400, body);
      assert.ok(
        typeof r.json === "object" && r.json !== null && "error" in r.json &&
          String(r.json.error).startsWith(error),
        `${body}: ${JSON.stringify(r.json)}`,
      );
    }
    assert.deepEqual((await call("/scopej/ads")).json, {
      name: "ads",
      output_level: "info",
      stack_trace_level: "none",
      log_callers: false,
    });
  });
});
