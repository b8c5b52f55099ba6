import assert from "node:assert/strict";
import { type StartedKubeApi, startKubeApi } from "./mod.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

interface Event {
  type: string;
  object: { metadata?: { name?: string; resourceVersion?: string }; code?: number; kind?: string };
}

/** Raw HTTP access with the server's CA and admin token, as any client does. */
function rawClient(api: StartedKubeApi): {
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<Response>;
  watch(path: string, count: number): Promise<Event[]>;
  close(): void;
} {
  const client = Deno.createHttpClient({ caCerts: [api.server.caPem] });
  const headers = { authorization: `Bearer ${api.server.token}` };
  const call = (
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<Response> =>
    fetch(api.url + path, {
      method,
      client,
      headers: { ...headers, "content-type": contentType },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return {
    call,
    /** Reads `count` events (or until the stream ends), then cancels. */
    async watch(path: string, count: number): Promise<Event[]> {
      const res = await call("GET", path);
      assert.equal(res.status, 200);
      const events: Event[] = [];
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      while (events.length < count) {
        const { done, value } = await within(
          reader.read(),
          10_000,
          `watch event ${events.length + 1} of ${path}`,
        );
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          events.push(JSON.parse(buf.slice(0, i)));
          buf = buf.slice(i + 1);
        }
      }
      await reader.cancel();
      return events;
    },
    close: () => client.close(),
  };
}

const cm = (name: string, labels: Record<string, string>) => ({ metadata: { name, labels }, data: {} });
const CMS = "/api/v1/namespaces/default/configmaps";

Deno.test("watch: replay after a resourceVersion, selector transitions as ADDED/DELETED, 410 Gone past the history", async () => {
  const api = await startKubeApi({ historySize: 4 });
  const raw = rawClient(api);
  try {
    const first = await (await raw.call("POST", CMS, cm("a", { tier: "web" }))).json();
    const rv0 = first.metadata.resourceVersion;
    await (await raw.call("POST", CMS, cm("b", { tier: "db" }))).body?.cancel();
    await (await raw.call(
      "PATCH",
      `${CMS}/a`,
      { metadata: { labels: { tier: "db" } } },
      "application/merge-patch+json",
    ))
      .body?.cancel();
    await (await raw.call(
      "PATCH",
      `${CMS}/a`,
      { metadata: { labels: { tier: "web" } } },
      "application/merge-patch+json",
    ))
      .body?.cancel();
    const events = await raw.watch(`${CMS}?watch=1&resourceVersion=${rv0}&labelSelector=tier%3Dweb`, 2);
    assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata?.name}`), ["DELETED a", "ADDED a"]);

    for (let i = 0; i < 5; i++) await (await raw.call("POST", CMS, cm(`n${i}`, {}))).body?.cancel();
    const gone = await raw.watch(`${CMS}?watch=1&resourceVersion=${rv0}`, 2);
    assert.equal(gone.length, 1, "the stream ends after the ERROR event");
    assert.equal(gone[0].type, "ERROR");
    assert.equal(gone[0].object.code, 410);

    const list = await (await raw.call("GET", `${CMS}?limit=3`)).json();
    assert.equal(list.items.length, 3);
    assert.equal(list.metadata.remainingItemCount, 4);
    const rest = await (await raw.call("GET", `${CMS}?limit=10&continue=${list.metadata.continue}`)).json();
    assert.equal(rest.items.length, 4);
  } finally {
    raw.close();
    await api.stop();
  }
});

Deno.test("watch: initial ADDED events for resourceVersion 0, BOOKMARK events carry the current resourceVersion, timeoutSeconds ends it", async () => {
  const api = await startKubeApi({ bookmarkMs: 100 });
  const raw = rawClient(api);
  try {
    await (await raw.call("POST", CMS, cm("a", {}))).body?.cancel();
    const events = await raw.watch(`${CMS}?watch=1&resourceVersion=0&allowWatchBookmarks=true`, 3);
    assert.equal(events[0].type, "ADDED");
    assert.equal(events[1].type, "BOOKMARK");
    assert.equal(events[1].object.kind, "ConfigMap");
    assert.equal(
      events[1].object.metadata?.resourceVersion,
      String(api.server.objects.store.resourceVersion),
    );
    const ended = await raw.watch(`${CMS}?watch=1&resourceVersion=0&timeoutSeconds=1`, 5);
    assert.deepEqual(ended.map((e) => e.type), ["ADDED"]);
    const bad = await raw.call("GET", `${CMS}?watch=1&resourceVersion=abc`);
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    const huge = await raw.call("POST", CMS, {
      metadata: { name: "huge" },
      data: { k: "x".repeat(3 * 1024 * 1024) },
    });
    assert.equal(huge.status, 413);
    await huge.body?.cancel();
    const anonymous = Deno.createHttpClient({ caCerts: [api.server.caPem] });
    const unauth = await fetch(api.url + "/api/v1/namespaces", { client: anonymous });
    assert.equal(unauth.status, 401);
    await unauth.body?.cancel();
    const wrong = await fetch(api.url + "/api/v1/namespaces", {
      client: anonymous,
      headers: { authorization: `Bearer ${api.server.token.slice(0, -1)}x` },
    });
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    anonymous.close();
  } finally {
    raw.close();
    await api.stop();
  }
});
