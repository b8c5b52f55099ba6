import { type Case, fwd, testCases } from "./_test_support.ts";

/** VirtualService rules on CORS, fault injection, mirroring and retries. */
const cases: Case[] = [
  // CORS
  {
    name: "cors: ok",
    spec: fwd({
      corsPolicy: {
        allowOrigins: [{ exact: "https://example.com" }],
        allowMethods: ["GET", "POST"],
        maxAge: "24h",
      },
    }),
  },
  {
    name: "cors: empty origin match",
    spec: fwd({ corsPolicy: { allowOrigins: [{}] } }),
    want: {
      path: "spec.http[0].corsPolicy.allowOrigins[0]",
      message: "one of exact, prefix, regex is required",
    },
  },
  {
    name: "cors: empty origin",
    spec: fwd({ corsPolicy: { allowOrigins: [{ exact: "" }] } }),
    want: { path: "spec.http[0].corsPolicy.allowOrigins[0].exact", message: "must not be empty" },
  },
  {
    name: "cors: method",
    spec: fwd({ corsPolicy: { allowMethods: ["get"] } }),
    want: {
      path: "spec.http[0].corsPolicy.allowMethods[0]",
      message: '"get" is not a supported HTTP method',
    },
  },
  {
    name: "cors: header name",
    spec: fwd({ corsPolicy: { exposeHeaders: ["x foo"] } }),
    want: { path: "spec.http[0].corsPolicy.exposeHeaders[0]", message: "not a valid header name" },
  },
  {
    name: "cors: maxAge whole seconds",
    spec: fwd({ corsPolicy: { maxAge: "1.5s" } }),
    want: { path: "spec.http[0].corsPolicy.maxAge", message: "whole seconds" },
  },
  {
    name: "cors: allowOrigin is deprecated",
    spec: fwd({ corsPolicy: { allowOrigin: ["*"] } }),
    want: { path: "spec.http[0].corsPolicy.allowOrigin", message: "deprecated", severity: "warning" },
  },
  // Fault injection
  {
    name: "fault: delay ok",
    spec: fwd({ fault: { delay: { percentage: { value: 0.1 }, fixedDelay: "5s" } } }),
  },
  {
    name: "fault: needs abort or delay",
    spec: fwd({ fault: {} }),
    want: { path: "spec.http[0].fault", message: "abort and/or a delay" },
  },
  {
    name: "fault: abort HTTP status",
    spec: fwd({ fault: { abort: { httpStatus: 700 } } }),
    want: { path: "spec.http[0].fault.abort.httpStatus", message: "not in the range 200-599" },
  },
  {
    name: "fault: abort gRPC status",
    spec: fwd({ fault: { abort: { grpcStatus: "GONE" } } }),
    want: { path: "spec.http[0].fault.abort.grpcStatus", message: 'gRPC status "GONE" is not supported' },
  },
  {
    name: "fault: abort http2Error",
    spec: fwd({ fault: { abort: { http2Error: "x" } } }),
    want: { path: "spec.http[0].fault.abort.http2Error", message: "not supported" },
  },
  {
    name: "fault: abort one type",
    spec: fwd({ fault: { abort: { httpStatus: 500, grpcStatus: "UNAVAILABLE" } } }),
    want: { path: "spec.http[0].fault.abort", message: "only one of httpStatus, grpcStatus, http2Error" },
  },
  {
    name: "fault: abort without type warns",
    spec: fwd({ fault: { abort: { percentage: { value: 10 } } } }),
    want: { path: "spec.http[0].fault.abort", message: "does nothing", severity: "warning" },
  },
  {
    name: "fault: abort percentage",
    spec: fwd({ fault: { abort: { httpStatus: 500, percentage: { value: 101 } } } }),
    want: { path: "spec.http[0].fault.abort.percentage.value", message: "neither 0 nor" },
  },
  {
    name: "fault: delay duration",
    spec: fwd({ fault: { delay: { fixedDelay: "5" } } }),
    want: { path: "spec.http[0].fault.delay.fixedDelay", message: "is not a duration" },
  },
  {
    name: "fault: exponentialDelay unsupported",
    spec: fwd({ fault: { delay: { exponentialDelay: "1s" } } }),
    want: { path: "spec.http[0].fault.delay.exponentialDelay", message: "not supported" },
  },
  {
    name: "fault: delay one type",
    spec: fwd({ fault: { delay: { fixedDelay: "1s", exponentialDelay: "1s" } } }),
    want: { path: "spec.http[0].fault.delay", message: "only one of fixedDelay, exponentialDelay" },
  },
  {
    name: "fault: deprecated delay percent",
    spec: fwd({ fault: { delay: { fixedDelay: "1s", percent: 150 } } }),
    want: { path: "spec.http[0].fault.delay.percent", message: "not in the range 0..100" },
  },
  // Mirroring
  {
    name: "mirror: ok",
    spec: fwd({ mirror: { host: "shadow", subset: "v2" }, mirrorPercentage: { value: 100 } }),
  },
  {
    name: "mirror: mirrorPercent range",
    spec: fwd({ mirror: { host: "shadow" }, mirrorPercent: 150 }),
    want: { path: "spec.http[0].mirrorPercent", message: "at most 100" },
  },
  {
    name: "mirror: mirror_percent is deprecated",
    spec: fwd({ mirror: { host: "shadow" }, mirror_percent: 50 }),
    want: { path: "spec.http[0].mirror_percent", message: "deprecated", severity: "warning" },
  },
  {
    name: "mirror: mirrorPercentage range",
    spec: fwd({ mirror: { host: "shadow" }, mirrorPercentage: { value: 101 } }),
    want: { path: "spec.http[0].mirrorPercentage.value", message: "within 0..100" },
  },
  {
    name: "mirror: host",
    spec: fwd({ mirror: { host: "*" } }),
    want: { path: "spec.http[0].mirror.host", message: 'cannot be "*"' },
  },
  {
    name: "mirrors: percentage",
    spec: fwd({ mirrors: [{ destination: { host: "shadow" }, percentage: { value: 200 } }] }),
    want: { path: "spec.http[0].mirrors[0].percentage.value", message: "within 0..100" },
  },
  {
    name: "mirrors: destination",
    spec: fwd({ mirrors: [{ destination: { host: "shadow", subset: "V_2" } }] }),
    want: { path: "spec.http[0].mirrors[0].destination.subset", message: "invalid subset name" },
  },
  // Retries, timeouts
  {
    name: "retries: ok",
    spec: fwd({
      retries: { attempts: 3, perTryTimeout: "2s", retryOn: "gateway-error,connect-failure,503" },
    }),
  },
  {
    name: "retries: negative attempts",
    spec: fwd({ retries: { attempts: -1 } }),
    want: { path: "spec.http[0].retries.attempts", message: "cannot be negative" },
  },
  {
    name: "retries: settings without attempts",
    spec: fwd({ retries: { retryOn: "5xx" } }),
    want: { path: "spec.http[0].retries", message: "no effect with attempts 0" },
  },
  {
    name: "retries: perTryTimeout",
    spec: fwd({ retries: { attempts: 2, perTryTimeout: "2" } }),
    want: { path: "spec.http[0].retries.perTryTimeout", message: "is not a duration" },
  },
  {
    name: "retries: backoff at least 1ms",
    spec: fwd({ retries: { attempts: 2, backoff: "0.1ms" } }),
    want: { path: "spec.http[0].retries.backoff", message: "at least 1ms" },
  },
  {
    name: "retries: retryOn policy",
    spec: fwd({ retries: { attempts: 2, retryOn: "5xx, reset" } }),
    want: { path: "spec.http[0].retries.retryOn", message: '" reset" is not a valid retryOn policy' },
  },
];

testCases(cases);
