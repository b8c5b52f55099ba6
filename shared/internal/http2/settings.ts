/**
 * SETTINGS (RFC 9113 section 6.5): what this side advertises, and applying the peer's values with
 * the checks of section 6.5.2 (ENABLE_PUSH 0 or 1 and never 1 from a server, INITIAL_WINDOW_SIZE at
 * most 2^31-1, MAX_FRAME_SIZE within 2^14..2^24-1) and the window change of section 6.9.2.
 *
 * @module
 */
import {
  DEFAULT_WINDOW,
  ENHANCE_YOUR_CALM,
  FLOW_CONTROL_ERROR,
  MAX_MAX_FRAME_SIZE,
  MAX_WINDOW,
  MIN_MAX_FRAME_SIZE,
  PROTOCOL_ERROR,
  read32,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_HEADER_TABLE_SIZE,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  SETTINGS_MAX_FRAME_SIZE,
  SETTINGS_MAX_HEADER_LIST_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from "./frame.ts";
import { Http2Error, type Http2Limits } from "./limits.ts";
import type { Http2Session } from "./session.ts";

/**
 * The frames that open a connection after the preface: our SETTINGS (push off, the limits) and a
 * WINDOW_UPDATE that grows the connection window from 65,535 to `initialConnectionWindowSize`.
 */
export function openingFrames(limits: Http2Limits, server: boolean): Uint8Array[] {
  const entries: [number, number][] = [
    [SETTINGS_MAX_CONCURRENT_STREAMS, server ? limits.maxConcurrentStreams : 0],
    [SETTINGS_INITIAL_WINDOW_SIZE, limits.initialStreamWindowSize],
    [SETTINGS_MAX_HEADER_LIST_SIZE, limits.maxHeaderListBytes],
  ];
  if (!server) entries.unshift([SETTINGS_ENABLE_PUSH, 0]);
  if (limits.headerTableSize !== 4096) entries.unshift([SETTINGS_HEADER_TABLE_SIZE, limits.headerTableSize]);
  if (limits.maxFrameSize !== MIN_MAX_FRAME_SIZE) {
    entries.push([SETTINGS_MAX_FRAME_SIZE, limits.maxFrameSize]);
  }
  const frames = [settingsFrame(entries)];
  const grow = limits.initialConnectionWindowSize - DEFAULT_WINDOW;
  if (grow > 0) frames.push(windowUpdateFrame(0, grow));
  return frames;
}

/** Applies a SETTINGS payload (a multiple of 6 octets) from the peer. Throws Http2Error. */
export function applySettings(s: Http2Session, payload: Uint8Array): void {
  if (payload.length / 6 > s.limits.maxSettingsEntries) {
    throw new Http2Error(
      ENHANCE_YOUR_CALM,
      `more than ${s.limits.maxSettingsEntries} entries in one SETTINGS frame`,
    );
  }
  for (let p = 0; p < payload.length; p += 6) {
    const id = (payload[p] << 8) | payload[p + 1];
    const value = read32(payload, p + 2);
    switch (id) {
      case SETTINGS_HEADER_TABLE_SIZE:
        s.encoder.setPeerTableSize(value);
        break;
      case SETTINGS_ENABLE_PUSH:
        if (value > 1 || (!s.server && value !== 0)) {
          throw new Http2Error(PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH ${value}`);
        }
        break;
      case SETTINGS_MAX_CONCURRENT_STREAMS:
        s.peerMaxConcurrent = value;
        break;
      case SETTINGS_INITIAL_WINDOW_SIZE:
        if (value > MAX_WINDOW) {
          throw new Http2Error(FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${value}`);
        }
        changeInitialWindow(s, value);
        break;
      case SETTINGS_MAX_FRAME_SIZE:
        if (value < MIN_MAX_FRAME_SIZE || value > MAX_MAX_FRAME_SIZE) {
          throw new Http2Error(PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${value}`);
        }
        s.peerMaxFrameSize = value;
        break;
      default:
        break; // SETTINGS_MAX_HEADER_LIST_SIZE is advisory; unknown settings are ignored (6.5.2)
    }
  }
}

/** Section 6.9.2: every stream's send window moves by the difference; none may pass 2^31-1. */
function changeInitialWindow(s: Http2Session, value: number): void {
  const delta = value - s.peerInitialWindow;
  s.peerInitialWindow = value;
  if (delta === 0) return;
  for (const stream of s.streams.values()) {
    if (stream.sendWindow + delta > MAX_WINDOW) {
      throw new Http2Error(FLOW_CONTROL_ERROR, `stream ${stream.id} window over 2^31-1 after SETTINGS`);
    }
    stream.sendWindow += delta;
  }
  if (delta > 0) s.wake();
}
