/**
 * Istio's standard request metrics (`istio_requests_total`, `istio_request_duration_milliseconds`,
 * ../http/istio_metrics.ts) for HTTP/2 streams: one request per stream, its response code and the time
 * from the stream's request head to its response head, under the label set of the route (or of the
 * proxy's own replies). The label set is HTTP's (`request_protocol="http"`); Istio's `grpc` protocol
 * and `grpc_response_status` labels are not set.
 *
 * @module
 */
import type { LabelSet } from "../http/istio_metrics.ts";
import type { StreamObserver } from "./relay.ts";

/** `inner`, also recording the stream's response in `labels` (none when `labels` is undefined). */
export function meteredStream(inner: StreamObserver, labels: LabelSet | undefined): StreamObserver {
  if (labels === undefined) return inner;
  const start = performance.now();
  return {
    response(status: number, local: boolean): void {
      labels.record(status, performance.now() - start);
      inner.response(status, local);
    },
    upstreamError: (kind) => inner.upstreamError(kind),
  };
}
