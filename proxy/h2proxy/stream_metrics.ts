/**
 * Istio's standard request metrics (`istio_requests_total`, `istio_request_duration_milliseconds`,
 * ../http/istio_metrics.ts) for HTTP/2 streams: one request per stream, under the label set of the
 * route (or of the proxy's own replies). A stream that is not gRPC is counted when its response head
 * is sent, timed from its request head. A gRPC stream (../grpc/grpc_status.ts `isGrpcForStats`:
 * `application/grpc` or `application/grpc+*`) counts in the set's `request_protocol="grpc"` twin with
 * its `grpc_response_status`, as Istio's stats plugin: the `grpc-status` of the trailers the client
 * got, else of the response head (trailers-only), else Envoy's `httpToGrpcStatus` of the HTTP status
 * (a stream reset after its head: 2 UNKNOWN). It is counted when the stream closes (the status comes
 * last), timed from its request head to then, as Istio's duration to the stream's end.
 *
 * @module
 */
import type { LabelSet } from "../http/istio_metrics.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import { grpcResponseStatus, isGrpcForStats } from "../grpc/grpc_status.ts";
import { headerValue } from "./request_head.ts";
import type { StreamObserver } from "./relay.ts";

/**
 * `inner`, also recording the response of `stream` (the downstream stream) in `labels` (none when
 * `labels` is undefined).
 */
export function meteredStream(
  inner: StreamObserver,
  labels: LabelSet | undefined,
  stream: Http2Stream,
): StreamObserver {
  if (labels === undefined) return inner;
  const start = performance.now();
  if (!isGrpcForStats(headerValue(stream.headers, "content-type")) || !headerValue(stream.headers, ":path")) {
    return {
      response(status: number, local: boolean): void {
        labels.record(status, performance.now() - start);
        inner.response(status, local);
      },
      upstreamError: (kind) => inner.upstreamError(kind),
    };
  }
  let code = -1;
  let fromHead: string | undefined;
  let fromTrailers: string | undefined;
  stream.closed.then(() => {
    if (code < 0) return; // no response: the client left first
    labels.grpc().record(code, performance.now() - start, grpcResponseStatus(fromTrailers, fromHead, code));
  });
  return {
    response(status, local, head): void {
      code = status;
      fromHead = head && headerValue(head, "grpc-status");
      inner.response(status, local, head);
    },
    trailers(trailers): void {
      fromTrailers = trailers && headerValue(trailers, "grpc-status");
      inner.trailers?.(trailers);
    },
    upstreamError: (kind) => inner.upstreamError(kind),
  };
}
