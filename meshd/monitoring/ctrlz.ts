/**
 * ctrlz, meshd's introspection interface on --ctrlz_address:--ctrlz_port: read and change log levels
 * per scope at run time, in the JSON shape of Istio's ctrlz `/scopej/` (what `meshctl admin log`
 * reads and sets).
 *
 * @module
 */
import type { Logger } from "../logging/mod.ts";
import { type LevelName, LEVELS, type ScopeName, SCOPES } from "../logging/scopes.ts";

/** One scope as `/scopej/` shows it (Istio's field names). */
export interface ScopeInfo {
  name: string;
  output_level: string;
  stack_trace_level: string;
  log_callers: boolean;
}

function info(logger: Logger): ScopeInfo[] {
  return logger.scopes().map((s) => ({
    name: s.name,
    output_level: s.outputLevel,
    stack_trace_level: s.stacktraceLevel,
    log_callers: s.caller,
  }));
}

function isScope(name: string): name is ScopeName {
  return (SCOPES as readonly string[]).includes(name);
}

/** What a PUT to `/scopej/<scope>` changes: the fields of a {@link ScopeInfo} it carries. */
interface ScopeChange {
  outputLevel?: LevelName;
  stacktraceLevel?: LevelName;
  caller?: boolean;
}

/**
 * A PUT's JSON body, decoded once: `output_level` and `stack_trace_level` must be one of
 * {@link LEVELS} when present; `log_callers` counts when it is a boolean (Istio ignores the rest).
 *
 * @returns the change, or the reason the body is refused (the 400's error)
 */
function decodeChange(body: unknown): ScopeChange | string {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return "the body must be a JSON object";
  }
  const fields = new Map<string, unknown>(Object.entries(body));
  const change: ScopeChange = {};
  for (
    const [field, key] of [["output_level", "outputLevel"], ["stack_trace_level", "stacktraceLevel"]] as const
  ) {
    const v = fields.get(field);
    if (v === undefined) continue;
    const level = LEVELS.find((l) => l === v);
    if (level === undefined) return `${field}: unknown level "${v}"; levels: ${LEVELS.join(", ")}`;
    change[key] = level;
  }
  const caller = fields.get("log_callers");
  if (typeof caller === "boolean") change.caller = caller;
  return change;
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body, null, 2) + "\n", {
    status,
    headers: { "content-type": "application/json" },
  });

/**
 * Serves ctrlz. `address` is --ctrlz_address: `localhost` binds 127.0.0.1, `*` every address.
 *
 * GET /scopej/ lists scopes; GET /scopej/<scope> shows one; PUT /scopej/<scope> with
 * `{"output_level": "debug", "stack_trace_level": "none", "log_callers": false}` changes it (any
 * subset of the fields); an unknown scope or level is 400 with the reason.
 */
export function serveCtrlz(
  logger: Logger,
  options: { address: string; port: number },
): Deno.HttpServer<Deno.NetAddr> {
  const hostname = options.address === "localhost"
    ? "127.0.0.1"
    : options.address === "*"
    ? "0.0.0.0"
    : options.address;
  return Deno.serve({ hostname, port: options.port, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/scopej" || path === "/scopej/") return json(info(logger));
    const m = /^\/scopej\/([^/]+)$/.exec(path);
    if (!m) return new Response(`not found: ${path}; try /scopej/\n`, { status: 404 });
    const scope = decodeURIComponent(m[1]);
    if (!isScope(scope)) return json({ error: `unknown scope "${scope}"` }, 404);
    if (req.method === "PUT" || req.method === "POST") {
      let body: unknown;
      try {
        body = await req.json();
      } catch {
        return json({ error: "the body must be JSON" }, 400);
      }
      const change = decodeChange(body);
      if (typeof change === "string") return json({ error: change }, 400);
      logger.configure(scope, change);
    } else if (req.method !== "GET") {
      return json({ error: `method ${req.method} not allowed` }, 405);
    }
    return json(info(logger).find((s) => s.name === scope));
  });
}
