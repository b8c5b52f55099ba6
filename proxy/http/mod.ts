/**
 * The proxy's own HTTP/1.1 codec and forwarder: the data path of the sidecar.
 *
 * @module
 */
export { CHUNK_DATA, CHUNK_DONE, CHUNK_NEED_MORE, ChunkedDecoder } from "./chunked.ts";
export { DEFAULT_HEAD_LIMITS, findHeadEnd, type HeadLimits, HeadParser } from "./head.ts";
export {
  EXPECT_CONTINUE,
  EXPECT_NONE,
  EXPECT_OTHER,
  HttpError,
  HttpHead,
  REQUEST,
  RESPONSE,
} from "./http_head.ts";
export { encodeLocalReply, encodeRequestHead, encodeResponseHead } from "./encode.ts";
export { Http1Session } from "./session.ts";
export type { Log, SessionObserver, SessionOptions, Upstream, UpstreamErrorKind } from "./session_types.ts";
export { ConnectionPool, type ConnectionPoolOptions } from "./connection_pool.ts";
export { SocketIo } from "./socket_io.ts";
