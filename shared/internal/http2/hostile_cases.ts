/**
 * The hostile-peer table of `hostile_test.ts`: per attack of `hostile_peer.py`, the exact answer the
 * codec must send, and for each limit-based defence a control run with the limit lifted, which must
 * NOT produce that answer (so the case fails when its defence is removed).
 *
 * @module
 */
import {
  COMPRESSION_ERROR,
  ENHANCE_YOUR_CALM,
  FLOW_CONTROL_ERROR,
  FRAME_SIZE_ERROR,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
  STREAM_CLOSED,
} from "./frame.ts";
import type { Http2Limits } from "./limits.ts";

/** What the peer must see. */
export interface Expect {
  /** The error code of the GOAWAY the codec sends ("none": no GOAWAY at all). */
  goaway?: number | "none";
  /** A RST_STREAM [stream, code] among those received. */
  rst?: [number, number];
  /** The :status of a stream's response [stream, status]. */
  status?: [number, number];
  /** The codec closed the connection. */
  closed?: boolean;
}

/** One attack. */
export interface HostileCase {
  /** The case name in hostile_peer.py. */
  name: string;
  /** The defence, for the README table. */
  defence: string;
  expect: Expect;
  /** Limits that switch the defence off: the control run must not get `expect`. */
  control?: Partial<Http2Limits>;
}

const OFF = 1e9;

/** Every case; each ends with a plain GET on a new connection that must get 200. */
export const HOSTILE_CASES: HostileCase[] = [
  {
    name: "goaway-before-settings",
    defence: "first frame must be SETTINGS",
    expect: { goaway: PROTOCOL_ERROR },
  },
  {
    name: "goaway-after-settings",
    defence: "peer GOAWAY, no streams: close",
    expect: { goaway: "none", closed: true },
  },
  {
    name: "goaway-mid-stream",
    defence: "peer GOAWAY: open streams finish",
    expect: { goaway: "none", status: [1, 200], closed: true },
  },
  {
    name: "goaway-repeated",
    defence: "5 GOAWAYs, ids up and down, 1,000 octets of debug data",
    expect: { goaway: "none", status: [1, 200], closed: true },
  },
  {
    name: "goaway-then-frames",
    defence: "HEADERS, PING, WINDOW_UPDATE after GOAWAY",
    expect: { goaway: "none", closed: true },
  },
  {
    name: "goaway-rst-after",
    defence: "GOAWAY CANCEL then RST_STREAM of 3 open streams",
    expect: { goaway: "none", closed: true },
  },
  {
    name: "rapid-reset",
    defence: "premature resets (CVE-2023-44487)",
    expect: { goaway: ENHANCE_YOUR_CALM, closed: true },
    control: { prematureResetTotalStreamCount: OFF },
  },
  {
    name: "rst-closed-flood",
    defence: "5,000 RST_STREAM on a closed stream: ignored",
    expect: { goaway: "none", status: [1, 200] },
  },
  {
    name: "settings-flood",
    defence: "max_outbound_control_frames (SETTINGS ACKs)",
    expect: { goaway: ENHANCE_YOUR_CALM, closed: true },
    control: { maxOutboundControlFrames: OFF, maxOutboundFrames: OFF },
  },
  {
    name: "settings-large",
    defence: "entries per SETTINGS frame (nghttp2's max_settings, CVE-2020-11080)",
    expect: { goaway: ENHANCE_YOUR_CALM, closed: true },
    control: { maxSettingsEntries: OFF },
  },
  {
    name: "hpack-bomb",
    defence: "decoded size, not block size, against max_request_headers_kb: 431",
    expect: { status: [1, 431] },
    control: { maxHeaderListBytes: 1 << 20 },
  },
  {
    name: "ping-flood",
    defence: "max_outbound_control_frames (PING ACKs)",
    expect: { goaway: ENHANCE_YOUR_CALM, closed: true },
    control: { maxOutboundControlFrames: OFF, maxOutboundFrames: OFF },
  },
  {
    name: "continuation-flood",
    defence: "CONTINUATION frames per header block",
    expect: { goaway: ENHANCE_YOUR_CALM, closed: true },
    control: { maxContinuationFrames: OFF },
  },
  {
    name: "continuation-empty",
    defence: "max_consecutive_inbound_frames_with_empty_payload (CONTINUATION)",
    expect: { goaway: ENHANCE_YOUR_CALM, closed: true },
    control: { maxConsecutiveInboundFramesWithEmptyPayload: OFF },
  },
  {
    name: "continuation-interleaved",
    defence: "no other frame inside a header block",
    expect: { goaway: PROTOCOL_ERROR },
  },
  {
    name: "header-list-too-large",
    defence: "max_request_headers_kb (60 KiB): 431",
    expect: { status: [1, 431] },
    control: { maxHeaderListBytes: 1 << 20 },
  },
  {
    name: "too-many-headers",
    defence: "max_headers_count (100): 431",
    expect: { status: [1, 431] },
    control: { maxHeaders: 1000 },
  },
  {
    name: "hpack-table-size-huge",
    defence: "table size update over SETTINGS_HEADER_TABLE_SIZE",
    expect: { goaway: COMPRESSION_ERROR },
  },
  { name: "hpack-huffman-garbage", defence: "Huffman EOS / padding", expect: { goaway: COMPRESSION_ERROR } },
  {
    name: "hpack-index-out-of-range",
    defence: "HPACK index beyond the tables",
    expect: { goaway: COMPRESSION_ERROR },
  },
  {
    name: "hpack-integer-overflow",
    defence: "HPACK integer over 2^31",
    expect: { goaway: COMPRESSION_ERROR },
  },
  {
    name: "window-update-conn-overflow",
    defence: "connection window over 2^31-1",
    expect: { goaway: FLOW_CONTROL_ERROR },
  },
  {
    name: "window-update-stream-overflow",
    defence: "stream window over 2^31-1",
    expect: { goaway: "none", rst: [1, FLOW_CONTROL_ERROR] },
  },
  {
    name: "window-update-zero-conn",
    defence: "WINDOW_UPDATE of 0 (connection)",
    expect: { goaway: PROTOCOL_ERROR },
  },
  {
    name: "window-update-zero-stream",
    defence: "WINDOW_UPDATE of 0 (stream)",
    expect: { goaway: "none", rst: [1, PROTOCOL_ERROR] },
  },
  {
    name: "window-update-flood",
    defence: "max_inbound_window_update_frames_per_data_frame_sent",
    expect: { goaway: ENHANCE_YOUR_CALM },
    control: { maxInboundWindowUpdateFramesPerDataFrameSent: OFF },
  },
  {
    name: "initial-window-overflow",
    defence: "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1",
    expect: { goaway: FLOW_CONTROL_ERROR },
  },
  {
    name: "empty-data-flood",
    defence: "max_consecutive_inbound_frames_with_empty_payload (DATA)",
    expect: { goaway: ENHANCE_YOUR_CALM },
    control: { maxConsecutiveInboundFramesWithEmptyPayload: OFF },
  },
  {
    name: "padded-data-flood",
    defence: "max_consecutive_inbound_frames_with_empty_payload (DATA with padding only)",
    expect: { goaway: ENHANCE_YOUR_CALM },
    control: { maxConsecutiveInboundFramesWithEmptyPayload: OFF },
  },
  {
    name: "priority-flood",
    defence: "max_inbound_priority_frames_per_stream",
    expect: { goaway: ENHANCE_YOUR_CALM },
    control: { maxInboundPriorityFramesPerStream: OFF },
  },
  { name: "stream-id-decrease", defence: "stream ids must increase", expect: { goaway: PROTOCOL_ERROR } },
  { name: "stream-id-reuse", defence: "a closed stream id reused", expect: { goaway: PROTOCOL_ERROR } },
  { name: "stream-id-even", defence: "client stream ids are odd", expect: { goaway: PROTOCOL_ERROR } },
  {
    name: "data-closed-stream",
    defence: "DATA on a closed stream",
    expect: { goaway: "none", rst: [1, STREAM_CLOSED] },
  },
  { name: "data-idle-stream", defence: "DATA on an idle stream", expect: { goaway: PROTOCOL_ERROR } },
  {
    name: "max-concurrent",
    defence: "max_concurrent_streams (100)",
    expect: { goaway: "none", rst: [201, REFUSED_STREAM] },
    control: { maxConcurrentStreams: 1000 },
  },
  { name: "bad-preface", defence: "client preface", expect: { goaway: PROTOCOL_ERROR } },
  { name: "frame-too-large", defence: "SETTINGS_MAX_FRAME_SIZE", expect: { goaway: FRAME_SIZE_ERROR } },
  { name: "push-promise", defence: "PUSH_PROMISE from a client", expect: { goaway: PROTOCOL_ERROR } },
  {
    name: "uppercase-header",
    defence: "malformed: uppercase name",
    expect: { goaway: "none", rst: [1, PROTOCOL_ERROR] },
  },
  {
    name: "connection-header",
    defence: "malformed: connection-specific field",
    expect: { goaway: "none", rst: [1, PROTOCOL_ERROR] },
  },
  {
    name: "content-length-mismatch",
    defence: "malformed: DATA shorter than content-length",
    expect: { goaway: "none", rst: [1, PROTOCOL_ERROR] },
  },
];
