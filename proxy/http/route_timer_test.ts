import assert from "node:assert/strict";
import { copying } from "./socket_test_support.ts";
import { RouteTimer } from "./route_timer.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("RouteTimer: expiry destroys the upstream connection; stop, 0 and a body not yet sent do not", async () => {
  const c = await copying();
  try {
    const t = new RouteTimer();
    t.start(0, c.dst);
    t.start(20, c.dst);
    t.stop();
    await sleep(50);
    assert.equal(t.expired, false);
    assert.equal(c.dst.closed, false, "stopped: the connection stays");

    // A body still being sent: no timer until it was all sent.
    let sent = false;
    let done!: () => void;
    t.startWhenSent(20, c.dst, new Promise<void>((r) => done = r), () => sent);
    await sleep(50);
    assert.equal(t.expired, false);
    sent = true;
    done();
    await sleep(60);
    assert.equal(t.expired, true);
    assert.equal(c.dst.closed, true, "expired: the connection is destroyed");
    t.stop();
    assert.equal(t.expired, false, "stop clears the flag for the next request");
  } finally {
    c.close();
  }
});
