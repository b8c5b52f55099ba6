/**
 * The `grpc_response_status` and `request_protocol` of Istio's standard request metrics (Istio docs
 * "Istio Standard Metrics"; istio/proxy source/extensions/filters/http/istio_stats/istio_stats.cc):
 * a request is gRPC when it has a `:path` and its `content-type` is `application/grpc` or
 * `application/grpc+...` (Envoy's `Grpc::Common::isGrpcRequestHeaders`; gRPC-Web is not, unless
 * Envoy's grpc_web filter translated it first), and its status is Envoy's
 * `Grpc::Common::getGrpcStatus(trailers, headers, info)`: the response trailers' `grpc-status`, else
 * the response headers' (trailers-only), else `httpToGrpcStatus` of the HTTP status; a value that is
 * not a number or above 16 is -1 (Envoy's `InvalidCode`).
 *
 * Pure functions; no I/O.
 *
 * @module
 */
import { httpToGrpcStatus } from "./local_reply.ts";

/** The status of a response whose status is unknown (no response code): the label is empty. */
export const NO_GRPC_STATUS = -2;

/** Envoy's `InvalidCode`: a `grpc-status` that is not a number or above 16 (UNAUTHENTICATED). */
export const INVALID_GRPC_STATUS = -1;

/** Whether Istio's stats plugin counts a request with this `content-type` as gRPC (case as sent). */
export function isGrpcForStats(contentType: string | undefined): boolean {
  if (contentType === undefined || !contentType.startsWith("application/grpc")) return false;
  return contentType.length === 16 || contentType.charCodeAt(16) === 0x2b; // "+"
}

/** A `grpc-status` value: undefined when absent or empty, {@link INVALID_GRPC_STATUS} when unusable. */
export function parseGrpcStatus(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  // absl::SimpleAtoi into uint64: optional surrounding whitespace and "+", decimal digits.
  const m = /^\s*\+?(\d+)\s*$/.exec(value);
  if (m === null) return INVALID_GRPC_STATUS;
  const n = Number(m[1]);
  return n > 16 ? INVALID_GRPC_STATUS : n;
}

/**
 * The gRPC status of a gRPC response: `trailer` (the trailers' `grpc-status`), else `header` (the
 * response headers'), else {@link httpToGrpcStatus} of `httpStatus`; {@link NO_GRPC_STATUS} when
 * neither header is usable and there is no HTTP status (0).
 */
export function grpcResponseStatus(
  trailer: string | undefined,
  header: string | undefined,
  httpStatus: number,
): number {
  return parseGrpcStatus(trailer) ?? parseGrpcStatus(header) ??
    (httpStatus === 0 ? NO_GRPC_STATUS : httpToGrpcStatus(httpStatus));
}

/** The label value of a status from {@link grpcResponseStatus}: `""` for {@link NO_GRPC_STATUS}. */
export function grpcStatusLabel(status: number): string {
  return status === NO_GRPC_STATUS ? "" : String(status);
}
