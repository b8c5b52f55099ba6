/**
 * The proxy's own answers to gRPC requests, as Envoy sends them (`Http::Utility::sendLocalReply` for a
 * request whose `content-type` starts with `application/grpc`): a trailers-only response, `:status 200`,
 * `content-type: application/grpc`, `grpc-status` and the reply text as `grpc-message`, percent-encoded
 * as the gRPC wire spec says (PROTOCOL-HTTP2.md, "Responses"). The status is the one the caller names
 * (a stream deadline: DEADLINE_EXCEEDED, as Envoy's max stream duration), else Envoy's
 * `Grpc::Utility::httpToGrpcStatus` of the HTTP status the request would have got
 * (https://github.com/grpc/grpc/blob/master/doc/http-grpc-status-mapping.md): the RBAC filter's 403 is
 * PERMISSION_DENIED (7), jwt_authn's 401 UNAUTHENTICATED (16), the router's 502/503/504 UNAVAILABLE (14).
 *
 * Pure functions; no I/O.
 *
 * @module
 */
import { percentEncodeGrpcMessage } from "../../shared/internal/grpc/messages.ts";

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GrpcStatus = Object.freeze({
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
});

/**
 * The gRPC status an intermediary that is not gRPC-aware implies with an HTTP status, as Envoy's
 * `Grpc::Utility::httpToGrpcStatus`: 400 INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED,
 * 404 UNIMPLEMENTED, 429/502/503/504 UNAVAILABLE, anything else UNKNOWN.
 */
export function httpToGrpcStatus(httpStatus: number): number {
  switch (httpStatus) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/**
 * Whether a request is gRPC (or gRPC-Web) by its `content-type` value, as Envoy's
 * `Grpc::Common::isGrpcRequestHeaders` (`application/grpc` exactly or followed by `+` or `;`, and the
 * `application/grpc-web` family). Case-insensitive (media types are).
 */
export function isGrpcContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const v = contentType.toLowerCase();
  if (!v.startsWith("application/grpc")) return false;
  const rest = v.slice("application/grpc".length);
  return rest === "" || rest[0] === "+" || rest[0] === ";" || rest.startsWith("-web");
}

/** Whether the `content-type` is gRPC-Web's (`application/grpc-web`, `-web+proto`, `-web-text`...). */
export function isGrpcWebContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.toLowerCase().startsWith("application/grpc-web");
}

/** A header list: `[name, value]` pairs, names lower-case, pseudo-headers first. */
export type HeaderList = [string, string][];

/**
 * The trailers-only response of a gRPC local reply: `:status 200`, `content-type: application/grpc`
 * (`application/grpc-web+proto` for a gRPC-Web request), `grpc-status` (`grpcStatus` when given, else
 * {@link httpToGrpcStatus} of `httpStatus`) and `grpc-message` (percent-encoded; absent when `message`
 * is empty). Sent as one HEADERS frame with END_STREAM.
 */
export function grpcLocalReply(
  httpStatus: number,
  message: string,
  options: { grpcStatus?: number; requestContentType?: string } = {},
): HeaderList {
  const status = options.grpcStatus ?? httpToGrpcStatus(httpStatus);
  const web = isGrpcWebContentType(options.requestContentType);
  const headers: HeaderList = [
    [":status", "200"],
    ["content-type", web ? "application/grpc-web+proto" : "application/grpc"],
    ["grpc-status", String(status)],
  ];
  if (message !== "") headers.push(["grpc-message", percentEncodeGrpcMessage(message)]);
  return headers;
}

/**
 * A gRPC local reply as an HTTP/1.1 response (gRPC-Web: its trailers-only form, the status in the
 * response headers, no body), for a gRPC-Web request answered by the proxy over HTTP/1.1.
 *
 * @param close adds `connection: close`
 */
export function grpcWebLocalReplyBytes(
  httpStatus: number,
  message: string,
  requestContentType: string,
  close: boolean,
): Uint8Array {
  const headers = grpcLocalReply(httpStatus, message, { requestContentType }).slice(1);
  const lines = headers.map(([n, v]) => `${n}: ${v}\r\n`).join("");
  return new TextEncoder().encode(
    `HTTP/1.1 200 OK\r\n${lines}content-length: 0\r\n${close ? "connection: close\r\n" : ""}\r\n`,
  );
}
