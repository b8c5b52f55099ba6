import assert from "node:assert/strict";
import { type LogFlags, Logger, parseLogOptions } from "./logger.ts";

const T0 = Date.UTC(2026, 10, 21);

function flags(change: Partial<LogFlags> = {}): LogFlags {
  return {
    outputLevel: "",
    stacktraceLevel: "default:none",
    caller: "",
    asJson: false,
    targets: ["stdout"],
    ...change,
  };
}

/** A logger over in-memory stdout and stderr, at a fixed time. */
function logger(change: Partial<LogFlags> = {}): { log: Logger; out: string[]; err: string[] } {
  const parsed = parseLogOptions(flags(change));
  assert.deepEqual(parsed.errors, []);
  const out: string[] = [];
  const err: string[] = [];
  const log = new Logger(parsed.value, {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    now: () => T0,
  });
  return { log, out, err };
}

Deno.test("logger: Istio's text line: time, level, scope, message, fields", () => {
  const { log, out } = logger();
  log.scope("ads").info("new connection", { node: "sidecar~10.0.0.1", id: 3, note: "two words" });
  assert.deepEqual(out, [
    `2026-11-21T00:00:00.000000Z\tinfo\tads\tnew connection\tnode=sidecar~10.0.0.1 id=3 note="two words"\n`,
  ]);
});

Deno.test("logger: the default scope's lines carry no scope", () => {
  const { log, out } = logger();
  log.scope("default").warn("hello");
  assert.deepEqual(out, ["2026-11-21T00:00:00.000000Z\twarn\thello\n"]);
});

Deno.test("logger: JSON lines with --log_as_json", () => {
  const { log, out } = logger({ asJson: true });
  log.scope("ads").error("push failed", { version: 3n, cause: new Error("boom"), msg: "not overriding" });
  assert.deepEqual(JSON.parse(out[0]), {
    level: "error",
    time: "2026-11-21T00:00:00.000000Z",
    scope: "ads",
    msg: "push failed",
    version: "3",
    cause: "boom",
  });
  assert.ok(out[0].startsWith('{"level":"error","time":'));
});

const levelCases: { outputLevel: string; scope: "ads" | "ca"; written: string[] }[] = [
  { outputLevel: "", scope: "ads", written: ["info", "warn", "error", "fatal"] },
  { outputLevel: "ads:debug", scope: "ads", written: ["debug", "info", "warn", "error", "fatal"] },
  { outputLevel: "ads:debug", scope: "ca", written: ["info", "warn", "error", "fatal"] },
  { outputLevel: "error", scope: "ca", written: ["error", "fatal"] },
  { outputLevel: "ads:none", scope: "ads", written: [] },
];
for (const c of levelCases) {
  Deno.test(`logger: --log_output_level "${c.outputLevel}" writes ${c.written.join(",") || "nothing"} in ${c.scope}`, () => {
    const { log, out } = logger({ outputLevel: c.outputLevel });
    const s = log.scope(c.scope);
    s.debug("m");
    s.info("m");
    s.warn("m");
    s.error("m");
    s.fatal("m");
    assert.deepEqual(out.map((l) => l.split("\t")[1]), c.written);
  });
}

Deno.test("logger: a disabled level builds no string and reads no clock", () => {
  let clock = 0;
  const parsed = parseLogOptions(flags({ outputLevel: "ads:error" }));
  const log = new Logger(parsed.value, {
    stdout: () => assert.fail("written"),
    stderr: () => {},
    now: () => ++clock,
  });
  const fields = {
    get costly(): string {
      return assert.fail("fields read");
    },
  };
  log.scope("ads").debug("m", fields);
  log.scope("ads").info("m", fields);
  assert.equal(clock, 0);
});

Deno.test("logger: levels change per scope at run time", () => {
  const { log, out } = logger();
  const ads = log.scope("ads");
  ads.debug("before");
  log.configure("ads", { outputLevel: "debug" });
  ads.debug("after");
  assert.equal(out.length, 1);
  assert.match(out[0], /\tdebug\tads\tafter\n$/);
  assert.deepEqual(log.scopes().find((s) => s.name === "ads"), {
    name: "ads",
    outputLevel: "debug",
    stacktraceLevel: "none",
    caller: false,
  });
  assert.equal(log.scope("ads"), ads, "one object per scope");
  assert.ok(ads.enabled("debug"));
  assert.ok(!ads.enabled("none"));
});

Deno.test("logger: --log_caller adds the calling file and line", () => {
  const { log, out } = logger({ caller: "ads" });
  log.scope("ads").info("here");
  assert.match(out[0], /\tinfo\tads\tlogging\/logger_test\.ts:\d+\there\n$/);
});

Deno.test("logger: --log_stacktrace_level adds a stack at and above the level", () => {
  const { log, out } = logger({ stacktraceLevel: "ads:error" });
  log.scope("ads").warn("no stack");
  log.scope("ads").error("stack");
  assert.doesNotMatch(out[0], /\n.+/);
  assert.match(out[1], /\tstack\n.*logger_test\.ts/);
  const json = logger({ stacktraceLevel: "ads:error", asJson: true });
  json.log.scope("ads").error("stack");
  assert.match(JSON.parse(json.out[0]).stack, /logger_test\.ts/);
});

Deno.test("logger: every --log_target gets every line; close() closes the files and keeps stdout", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/meshd.log`;
  const { log, out, err } = logger({ targets: ["stdout", "stderr", file] });
  try {
    log.scope("ca").info("issued");
    log.scope("ca").info("issued again");
    assert.equal(out.length, 2);
    assert.equal(err.length, 2);
    assert.equal(await Deno.readTextFile(file), out.join(""));
  } finally {
    log.close();
  }
  const written = await Deno.readTextFile(file);
  log.scope("ca").info("after close");
  log.close();
  assert.equal(out.length, 3, "stdout still gets lines after close()");
  assert.equal(err.length, 3, "stderr still gets lines after close()");
  assert.equal(await Deno.readTextFile(file), written, "the closed file gets nothing more");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("logger: a target that cannot be opened is an error naming it", () => {
  const parsed = parseLogOptions(flags({ targets: ["/nonexistent-dir/meshd.log"] }));
  assert.throws(
    () => new Logger(parsed.value, { stdout: () => {}, stderr: () => {} }),
    /^Error: --log_target: cannot open \/nonexistent-dir\/meshd.log: /,
  );
});

const badFlags: { name: string; flags: Partial<LogFlags>; error: RegExp }[] = [
  {
    name: "unknown scope",
    flags: { outputLevel: "adz:info" },
    error: /--log_output_level: "adz:info": unknown scope/,
  },
  {
    name: "unknown level",
    flags: { outputLevel: "ads:loud" },
    error: /--log_output_level: "ads:loud": unknown level/,
  },
  {
    name: "stack level",
    flags: { stacktraceLevel: "x" },
    error: /--log_stacktrace_level: "x": unknown level "x"/,
  },
  { name: "caller scope", flags: { caller: "nope" }, error: /--log_caller: unknown scope "nope"/ },
  { name: "no target", flags: { targets: [] }, error: /--log_target: no target given/ },
  { name: "empty target", flags: { targets: [""] }, error: /--log_target: "" is not a target/ },
];
for (const c of badFlags) {
  Deno.test(`parseLogOptions: ${c.name} is an error`, () => {
    const r = parseLogOptions(flags(c.flags));
    assert.equal(r.errors.length, 1, r.errors.join("\n"));
    assert.match(r.errors[0], c.error);
  });
}

Deno.test("parseLogOptions: defaults are info output, no stacks, no callers", () => {
  const r = parseLogOptions(flags());
  assert.equal(r.value.outputLevels.ads, "info");
  assert.equal(r.value.stacktraceLevels.default, "none");
  assert.equal(r.value.callers.size, 0);
});
