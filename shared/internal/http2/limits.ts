/**
 * The limits of one HTTP/2 connection, with Envoy's names and the values of Envoy's edge best
 * practices (https://www.envoyproxy.io/docs/envoy/latest/configuration/best_practices/edge) and its
 * `http2_protocol_options` defaults. Units: octets, frames, streams, milliseconds.
 *
 * @module
 */

/** Limits of a connection; see {@link DEFAULT_HTTP2_LIMITS} for each default and its Envoy name. */
export interface Http2Limits {
  /** Streams the peer may have open at once (`max_concurrent_streams`; edge: 100). More: RST_STREAM REFUSED_STREAM. */
  maxConcurrentStreams: number;
  /** Receive window of each stream, octets (`initial_stream_window_size`; edge: 65,536). */
  initialStreamWindowSize: number;
  /** Receive window of the connection, octets (`initial_connection_window_size`; edge: 1,048,576). */
  initialConnectionWindowSize: number;
  /** Decoded header list, octets as SETTINGS_MAX_HEADER_LIST_SIZE counts them (`max_request_headers_kb`: 60 KiB). */
  maxHeaderListBytes: number;
  /** Header fields per list, pseudo-headers included (`max_headers_count`: 100). */
  maxHeaders: number;
  /** HPACK dynamic table this side decodes with (`hpack_table_size`: 4,096). */
  headerTableSize: number;
  /** SETTINGS_MAX_FRAME_SIZE advertised (16,384, the RFC default). */
  maxFrameSize: number;
  /** Frames queued to the socket but not yet written (`max_outbound_frames`: 10,000). More: the connection is closed. */
  maxOutboundFrames: number;
  /**
   * Socket output, octets, above which DATA waits for the socket to drain (64 KiB; a server that fans
   * one write out to thousands of streams on a few connections, meshd's gRPC, takes more). Bounds what
   * a connection holds of our output.
   */
  writeBufferBytes: number;
  /** PING/SETTINGS ACKs and RST_STREAMs queued (`max_outbound_control_frames`: 1,000). More: the connection is closed. */
  maxOutboundControlFrames: number;
  /** HEADERS/CONTINUATION/DATA in a row with an empty payload and no END_STREAM (`max_consecutive_inbound_frames_with_empty_payload`: 1). */
  maxConsecutiveInboundFramesWithEmptyPayload: number;
  /** PRIORITY frames allowed: this × (1 + streams opened) (`max_inbound_priority_frames_per_stream`: 100). */
  maxInboundPriorityFramesPerStream: number;
  /** WINDOW_UPDATEs allowed: 5 + 2 × (streams opened + this × DATA frames sent) (`max_inbound_window_update_frames_per_data_frame_sent`: 10). */
  maxInboundWindowUpdateFramesPerDataFrameSent: number;
  /** Entries in one SETTINGS frame (nghttp2's `max_settings`, CVE-2020-11080: 32). More: GOAWAY ENHANCE_YOUR_CALM. */
  maxSettingsEntries: number;
  /** CONTINUATION frames after one HEADERS (nghttp2's CVE-2024-28182 limit: 8). More: GOAWAY ENHANCE_YOUR_CALM. */
  maxContinuationFrames: number;
  /** Rapid reset (CVE-2023-44487): streams closed before the check (`overload.premature_reset_total_stream_count`: 500). */
  prematureResetTotalStreamCount: number;
  /** A peer reset of a stream younger than this is premature (`overload.premature_reset_min_stream_lifetime_seconds`: 1 s). */
  prematureResetMinStreamLifetimeMs: number;
}

/** The defaults: Envoy's edge values (as `proxy/http/head.ts` for header sizes). */
export const DEFAULT_HTTP2_LIMITS: Readonly<Http2Limits> = Object.freeze({
  maxConcurrentStreams: 100,
  initialStreamWindowSize: 65536,
  initialConnectionWindowSize: 1048576,
  maxHeaderListBytes: 60 * 1024,
  maxHeaders: 100,
  headerTableSize: 4096,
  maxFrameSize: 16384,
  maxOutboundFrames: 10000,
  maxOutboundControlFrames: 1000,
  writeBufferBytes: 64 * 1024,
  maxConsecutiveInboundFramesWithEmptyPayload: 1,
  maxInboundPriorityFramesPerStream: 100,
  maxInboundWindowUpdateFramesPerDataFrameSent: 10,
  maxContinuationFrames: 8,
  maxSettingsEntries: 32,
  prematureResetTotalStreamCount: 500,
  prematureResetMinStreamLifetimeMs: 1000,
});

/** An HTTP/2 error: `code` is the RFC 9113 error code, `stream` the stream id (0: the connection). */
export class Http2Error extends Error {
  readonly code: number;
  readonly stream: number;
  constructor(code: number, message: string, stream = 0) {
    super(message);
    this.code = code;
    this.stream = stream;
  }
}
