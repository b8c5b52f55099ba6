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
    const name = decodeURIComponent(m[1]);
    if (!(SCOPES as readonly string[]).includes(name)) return json({ error: `unknown scope "${name}"` }, 404);
    const scope = name as ScopeName;
    if (req.method === "PUT" || req.method === "POST") {
      let body: Partial<ScopeInfo>;
      try {
        body = await req.json();
      } catch {
        return json({ error: "the body must be JSON" }, 400);
      }
      for (const field of ["output_level", "stack_trace_level"] as const) {
        const v = body[field];
        if (v !== undefined && !(LEVELS as readonly string[]).includes(v)) {
          return json({ error: `${field}: unknown level "${v}"; levels: ${LEVELS.join(", ")}` }, 400);
        }
      }
      logger.configure(scope, {
        outputLevel: body.output_level as LevelName | undefined,
        stacktraceLevel: body.stack_trace_level as LevelName | undefined,
        caller: typeof body.log_callers === "boolean" ? body.log_callers : undefined,
      });
    } else if (req.method !== "GET") {
      return json({ error: `method ${req.method} not allowed` }, 405);
    }
    return json(info(logger).find((s) => s.name === scope));
  });
}
