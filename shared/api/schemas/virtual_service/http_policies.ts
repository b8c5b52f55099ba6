/**
 * The traffic policies of an HTTP route: retries, fault injection, mirroring and CORS.
 * Istio's ValidateHTTPRetry, validateHTTPFaultInjection, validateHTTPMirrors and validateCORSPolicy.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../../finding.ts";
import { closed, StringEnum, StringList } from "../common.ts";
import {
  asArray,
  asNumber,
  asObject,
  asString,
  checkPercent,
  checkStringMatch,
  isSet,
  type Obj,
} from "../networking_rules.ts";
import { checkDuration } from "../duration.ts";
import { Int32, Percent, StringMatch } from "./fields.ts";
import { TOKEN } from "./headers.ts";
import { checkDestination, Destination } from "./destination.ts";
import { checkHttpStatus } from "./http_actions.ts";

export const HTTPRetry = Type.Object({
  attempts: Type.Optional(Int32("Number of retries; 0 disables retries")),
  perTryTimeout: Type.Optional(Type.String({ description: "Timeout per attempt, e.g. 2s; at least 1ms" })),
  retryOn: Type.Optional(
    Type.String({ description: "Comma-separated Envoy retry conditions or status codes" }),
  ),
  retryRemoteLocalities: Type.Optional(Type.Boolean({ description: "Retry in other localities" })),
  retryIgnorePreviousHosts: Type.Optional(
    Type.Boolean({ description: "Retry on other hosts; default true" }),
  ),
  backoff: Type.Optional(Type.String({ description: "Base interval between retries; default 25ms" })),
}, { ...closed, title: "HTTPRetry", description: "Retry policy" });

const HTTPFaultInjectionDelay = Type.Object({
  fixedDelay: Type.Optional(Type.String({ description: "Delay, e.g. 5s; at least 1ms" })),
  exponentialDelay: Type.Optional(Type.String({ description: "Not supported" })),
  percentage: Type.Optional(Percent),
  percent: Type.Optional(Int32("Deprecated: use percentage")),
}, { ...closed, title: "HTTPFaultInjectionDelay", description: "One of fixedDelay, exponentialDelay" });

const HTTPFaultInjectionAbort = Type.Object({
  httpStatus: Type.Optional(Int32("HTTP status to answer, 200-599")),
  grpcStatus: Type.Optional(Type.String({ description: "gRPC status name, e.g. UNAVAILABLE" })),
  http2Error: Type.Optional(Type.String({ description: "Not supported" })),
  percentage: Type.Optional(Percent),
}, { ...closed, title: "HTTPFaultInjectionAbort", description: "One of httpStatus, grpcStatus, http2Error" });

export const HTTPFaultInjection = Type.Object({
  delay: Type.Optional(HTTPFaultInjectionDelay),
  abort: Type.Optional(HTTPFaultInjectionAbort),
}, { ...closed, title: "HTTPFaultInjection", description: "Faults injected into matching requests" });

export const HTTPMirrorPolicy = Type.Object({
  destination: Destination,
  percentage: Type.Optional(Percent),
}, { ...closed, title: "HTTPMirrorPolicy", description: "A destination requests are copied to" });

export const CorsPolicy = Type.Object({
  allowOrigin: Type.Optional(StringList("Deprecated: use allowOrigins")),
  allowOrigins: Type.Optional(Type.Array(StringMatch, { description: "Origins allowed" })),
  allowMethods: Type.Optional(StringList("Methods allowed (GET, POST, ..., or *)")),
  allowHeaders: Type.Optional(StringList("Request headers allowed")),
  exposeHeaders: Type.Optional(StringList("Response headers the browser may read")),
  maxAge: Type.Optional(Type.String({ description: "How long preflight results are cached, whole seconds" })),
  allowCredentials: Type.Optional(Type.Boolean({ description: "Whether credentials may be sent" })),
  unmatchedPreflights: Type.Optional(
    StringEnum(["UNSPECIFIED", "FORWARD", "IGNORE"], "Preflights with no match"),
  ),
}, { ...closed, title: "CorsPolicy", description: "Cross-origin resource sharing" });

/** Envoy's retry conditions (x-envoy-retry-on and x-envoy-retry-grpc-on), as Istio lists them. */
export const RETRY_ON_POLICIES: ReadonlySet<string> = new Set([
  "5xx",
  "gateway-error",
  "reset",
  "reset-before-request",
  "connect-failure",
  "retriable-4xx",
  "refused-stream",
  "retriable-status-codes",
  "retriable-headers",
  "envoy-ratelimited",
  "http3-post-connect-failure",
  "cancelled",
  "deadline-exceeded",
  "internal",
  "resource-exhausted",
  "unavailable",
]);

/** HTTP status codes with a standard name (Go's http.StatusText), which retryOn accepts. */
const KNOWN_STATUS_CODES = new Set([
  100,
  101,
  102,
  103,
  ...range(200, 208),
  226,
  ...range(300, 305),
  307,
  308,
  ...range(400, 418),
  ...range(421, 426),
  428,
  429,
  431,
  451,
  ...range(500, 508),
  510,
  511,
]);

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Istio's ValidateHTTPRetry. */
export function checkRetries(retries: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const attempts = asNumber(retries.attempts) ?? 0;
  if (attempts < 0) out.push(error([...at, "attempts"], "attempts cannot be negative"));
  if (
    attempts === 0 &&
    (isSet(retries.perTryTimeout) || asString(retries.retryOn) || isSet(retries.retryRemoteLocalities))
  ) {
    out.push(error(at, "retry settings have no effect with attempts 0 (retries disabled); set attempts"));
  }
  out.push(...checkDuration(retries.perTryTimeout, [...at, "perTryTimeout"]));
  out.push(...checkDuration(retries.backoff, [...at, "backoff"]));
  const retryOn = asString(retries.retryOn);
  if (retryOn) {
    for (const policy of retryOn.split(",")) {
      const code = /^[+-]?[0-9]+$/.test(policy) ? Number(policy) : 0;
      if (!KNOWN_STATUS_CODES.has(code) && !RETRY_ON_POLICIES.has(policy)) {
        out.push(
          error([...at, "retryOn"], `"${policy}" is not a valid retryOn policy (no spaces around commas)`),
        );
      }
    }
  }
  return out;
}

const CORS_METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "*",
]);

export function checkCors(cors: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(cors.allowOrigins).forEach((o, i) => {
    out.push(...checkStringMatch(o, [...at, "allowOrigins", i], { empty: "invalid" }));
  });
  if (asArray(cors.allowOrigin).length > 0) {
    out.push(warning([...at, "allowOrigin"], "allowOrigin is deprecated; use allowOrigins"));
  }
  asArray(cors.allowMethods).forEach((m, i) => {
    if (typeof m === "string" && !CORS_METHODS.has(m)) {
      out.push(error([...at, "allowMethods", i], `"${m}" is not a supported HTTP method`));
    }
  });
  for (const f of ["allowHeaders", "exposeHeaders"] as const) {
    asArray(cors[f]).forEach((h, i) => {
      if (typeof h !== "string") return;
      if (h === "") out.push(error([...at, f, i], "header name cannot be empty"));
      else if (h !== "*" && !TOKEN.test(h)) {
        out.push(error([...at, f, i], `"${h}" is not a valid header name`));
      }
    });
  }
  out.push(...checkDuration(cors.maxAge, [...at, "maxAge"], true));
  return out;
}

/** The gRPC status names Istio accepts for an abort (grpc-go's codes). */
export const GRPC_STATUS_NAMES: ReadonlySet<string> = new Set([
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
]);

/** Istio's validateHTTPFaultInjection (abort and delay). */
export function checkFault(fault: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const abort = asObject(fault.abort);
  const delay = asObject(fault.delay);
  if (!abort && !delay) out.push(error(at, "fault injection needs an abort and/or a delay"));
  if (abort) {
    const aat = [...at, "abort"];
    out.push(...checkPercent(abort.percentage, [...aat, "percentage"]));
    const types = (["httpStatus", "grpcStatus", "http2Error"] as const).filter((f) => isSet(abort[f]));
    if (types.length > 1) out.push(error(aat, `only one of httpStatus, grpcStatus, http2Error may be set`));
    else if (types.length === 0) {
      out.push(warning(aat, "abort has no httpStatus or grpcStatus, so it does nothing"));
    } else if (types[0] === "httpStatus") {
      out.push(...checkHttpStatus(abort.httpStatus, [...aat, "httpStatus"]));
    } else if (types[0] === "http2Error") {
      out.push(error([...aat, "http2Error"], "http2Error aborts are not supported"));
    } else {
      const s = asString(abort.grpcStatus);
      if (s !== undefined && !GRPC_STATUS_NAMES.has(s)) {
        out.push(
          error([...aat, "grpcStatus"], `gRPC status "${s}" is not supported; use a name such as NOT_FOUND`),
        );
      }
    }
  }
  if (delay) {
    const dat = [...at, "delay"];
    out.push(...checkPercent(delay.percentage, [...dat, "percentage"]));
    const percent = asNumber(delay.percent);
    if (percent !== undefined && (percent < 0 || percent > 100)) {
      out.push(error([...dat, "percent"], `percentage ${percent} is not in the range 0..100`));
    }
    if (isSet(delay.fixedDelay) && isSet(delay.exponentialDelay)) {
      out.push(error(dat, "only one of fixedDelay, exponentialDelay may be set"));
    }
    out.push(...checkDuration(delay.fixedDelay, [...dat, "fixedDelay"]));
    if (isSet(delay.exponentialDelay)) {
      out.push(...checkDuration(delay.exponentialDelay, [...dat, "exponentialDelay"]));
      out.push(error([...dat, "exponentialDelay"], "exponentialDelay is not supported; use fixedDelay"));
    }
  }
  return out;
}

export function checkMirrors(r: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  for (const f of ["mirrorPercent", "mirror_percent"] as const) {
    const v = asNumber(r[f]);
    if (v === undefined) continue;
    if (v > 100) out.push(error([...at, f], `${f} must be at most 100, got ${v}`));
    out.push(warning([...at, f], `${f} is deprecated; use mirrorPercentage`));
  }
  const pct = asNumber(asObject(r.mirrorPercentage)?.value);
  if (pct !== undefined && (pct < 0 || pct > 100)) {
    out.push(
      error([...at, "mirrorPercentage", "value"], `mirrorPercentage must be within 0..100, got ${pct}`),
    );
  }
  out.push(...checkDestination(r.mirror, [...at, "mirror"]));
  asArray(r.mirrors).forEach((m, i) => {
    const mirror = asObject(m);
    if (!mirror) return;
    out.push(...checkDestination(mirror.destination, [...at, "mirrors", i, "destination"]));
    const v = asNumber(asObject(mirror.percentage)?.value);
    if (v !== undefined && (v < 0 || v > 100)) {
      out.push(
        error(
          [...at, "mirrors", i, "percentage", "value"],
          `mirror percentage must be within 0..100, got ${v}`,
        ),
      );
    }
  });
  return out;
}
