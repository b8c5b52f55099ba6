/**
 * The meshd side of the scale benchmark: a discovery server on a config directory, in its own
 * process so that its RSS is measured alone. Prints `port <n>` when serving.
 *
 * @module
 */
import { DiscoveryServer } from "../../../meshd/server/discovery_server.ts";

const [configDir] = Deno.args;
const server = new DiscoveryServer({
  configDir,
  grpcAddr: "127.0.0.1:0",
  debounceAfterMs: 100,
  // MESHD_SERVING_CHILDREN=2 measures meshd/server/serving (gRPC in child processes behind a relay).
  servingChildren: Number(Deno.env.get("MESHD_SERVING_CHILDREN") ?? 0),
  pushThrottle: Number(Deno.env.get("DISCO_PUSH_THROTTLE") ?? 0),
  logger: { info() {}, warn() {}, error: (m) => console.error(m) },
  onPushContext: (_ctx, buildMs) => {
    if (Deno.env.get("BENCH_TRACE")) console.error(`push context built in ${buildMs.toFixed(0)} ms`);
  },
});
if (Deno.env.get("BENCH_TRACE")) {
  const push = server.ads.push.bind(server.ads);
  server.ads.push = (at?: number) => {
    const t = performance.now();
    push(at);
    // The push only queues streams; it is over when no stream waits for or holds a slot.
    const poll = setInterval(() => {
      if (server.ads.queued > 0 || server.ads.inFlight > 0) return;
      clearInterval(poll);
      console.error(`fan-out finished ${Date.now() - (at ?? Date.now())} ms after the change`);
    }, 5);
    console.error(
      `ads.push took ${
        (performance.now() - t).toFixed(0)
      } ms, ${(Date.now() - (at ?? Date.now()))} ms after the change`,
    );
  };
}
const { grpcPort } = await server.start();
console.log(`port ${grpcPort}`);
if (Deno.env.get("BENCH_TRACE")) {
  // Memory breakdown every few seconds: heap (JS objects) versus external (buffers) versus RSS.
  setInterval(() => {
    const m = Deno.memoryUsage();
    const mib = (n: number) => Math.round(n / 1048576);
    console.error(
      `memory rss=${mib(m.rss)} heapUsed=${mib(m.heapUsed)} heapTotal=${mib(m.heapTotal)} external=${
        mib(m.external)
      } MiB, streams=${server.ads.connected}`,
    );
  }, 3000);
}
Deno.addSignalListener("SIGTERM", async () => {
  await server.stop(100);
  Deno.exit(0);
});
