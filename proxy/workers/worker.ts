/**
 * A Worker isolate of the pool (./pool.ts, `--concurrency` 2 and more): the {@link DataPlane} on the
 * Worker's message port. Its module graph is the data path's alone (proxy/workers/README.md).
 *
 * @module
 */
import { DataPlane } from "./data_plane.ts";
import type { FromWorker, ToWorker } from "./protocol.ts";

const scope = self as unknown as {
  postMessage(m: FromWorker): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
};
const plane = new DataPlane((m) => scope.postMessage(m));
scope.onmessage = (e: MessageEvent<ToWorker>) => plane.handle(e.data);
