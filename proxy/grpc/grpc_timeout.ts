/**
 * The `grpc-timeout` request header (gRPC's PROTOCOL-HTTP2.md, "Requests": `TimeoutValue TimeoutUnit`,
 * at most 8 digits, unit `H` `M` `S` `m` `u` `n`) and the upstream timeout of a stream as Envoy's
 * router computes it under Istio's route configuration.
 *
 * Istio (pilot/pkg/networking/core/route/route.go `setTimeout`, and `BuildDefaultHTTPInboundRoute`
 * for inbound) sets every route's `timeout` to the VirtualService's `http[].timeout` or 0 (none), and
 * `max_grpc_timeout` to that same value (0 meaning no cap). Envoy's router
 * (source/common/router/router.cc `FilterUtility::finalTimeout`) then takes, for a gRPC request, the
 * `grpc-timeout` header capped by `max_grpc_timeout` (no header: the cap; both 0: none), and for any
 * other request the route's timeout; and it rewrites `grpc-timeout` to the timeout it applies
 * (`Grpc::Common::toGrpcTimeout`), so that the server knows the deadline it really has.
 *
 * Pure functions; no I/O.
 *
 * @module
 */

/** The largest TimeoutValue (8 digits), as Envoy's `MAX_GRPC_TIMEOUT_VALUE`. */
export const MAX_GRPC_TIMEOUT_VALUE = 99_999_999;

const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * A `grpc-timeout` value in milliseconds, as Envoy's `Grpc::Common::getGrpcTimeout`: micro- and
 * nanoseconds rounded up to the next millisecond. `undefined` when the header is absent or malformed
 * (empty, more than 8 digits, a sign, an unknown unit): then the request has no gRPC timeout. `0` is
 * a valid value, which Envoy reads as "no timeout" (see {@link upstreamTimeoutMs}).
 */
export function parseGrpcTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^([0-9]{1,8})([HMSmun])$/.exec(value);
  if (m === null) return undefined;
  return Math.ceil(Number(m[1]) * UNIT_MS[m[2]]);
}

/**
 * The `grpc-timeout` value for `ms` milliseconds, as Envoy's `Grpc::Common::toGrpcTimeout`:
 * milliseconds while they fit in 8 digits, else seconds, minutes, hours (clipped to 99999999H).
 */
export function formatGrpcTimeout(ms: number): string {
  let time = Math.max(0, Math.floor(ms));
  const units = ["m", "S", "M", "H"];
  let unit = 0;
  if (time > MAX_GRPC_TIMEOUT_VALUE) {
    time = Math.floor(time / 1000);
    unit++;
  }
  while (time > MAX_GRPC_TIMEOUT_VALUE) {
    if (unit === units.length - 1) {
      time = MAX_GRPC_TIMEOUT_VALUE;
    } else {
      time = Math.floor(time / 60);
      unit++;
    }
  }
  return `${time}${units[unit]}`;
}

/**
 * The upstream timeout of a request in milliseconds (0: none), as Envoy's `finalTimeout` with Istio's
 * `max_grpc_timeout` = the route timeout: for a gRPC request the `grpc-timeout` header (`grpcTimeout`,
 * parsed by {@link parseGrpcTimeout}) capped by `routeTimeoutMs` when that is set (no header: the
 * route timeout); for any other request `routeTimeoutMs`.
 *
 * @param routeTimeoutMs the route's timeout (VirtualService `http[].timeout`), 0 for none
 */
export function upstreamTimeoutMs(
  grpc: boolean,
  grpcTimeout: string | undefined,
  routeTimeoutMs: number,
): number {
  if (!grpc) return routeTimeoutMs;
  const header = parseGrpcTimeout(grpcTimeout) ?? 0;
  if (routeTimeoutMs !== 0 && (header === 0 || header > routeTimeoutMs)) return routeTimeoutMs;
  return header;
}
