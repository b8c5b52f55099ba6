/**
 * The read verbs: list (with label/field selectors, `limit` and `continue`) and watch (`?watch=1`): a
 * stream of JSON lines `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}`. A watch with no
 * resourceVersion or "0" starts with synthetic ADDED events for the current objects; with a
 * resourceVersion R it replays the kept events after R, or sends one ERROR event carrying a 410 Status
 * when R is older than the history. A MODIFIED object that stops (starts) matching the selectors is
 * sent as DELETED (ADDED), as kube-apiserver's watch cache does. BOOKMARK events carry only
 * `metadata.resourceVersion`. Source: Kubernetes API concepts, "Efficient detection of changes".
 *
 * @module
 */
import { parseFieldSelector, parseLabelSelector, type Selector } from "./selectors.ts";
import { apiVersionOf, type ResourceType } from "./resource_types.ts";
import { type Store, typeKeyOf } from "./store.ts";
import { ApiError, type KubeObject, meta, str } from "./types.ts";
import type { StoredEvent } from "./watch_hub.ts";

/** How a list or watch is narrowed. */
export interface ListQuery {
  namespace: string | undefined;
  selector: Selector;
}

/** Reads namespace and selectors of a list/watch request. */
export function listQuery(t: ResourceType, namespace: string, params: URLSearchParams): ListQuery {
  const labels = parseLabelSelector(params.get("labelSelector"));
  const fields = parseFieldSelector(params.get("fieldSelector"));
  return {
    namespace: t.namespaced && namespace ? namespace : undefined,
    selector: (o) => labels(o) && fields(o),
  };
}

function withType(t: ResourceType, o: KubeObject): KubeObject {
  o.apiVersion = apiVersionOf(t);
  o.kind = t.kind;
  return o;
}

/** The `<Kind>List` answer of a list request. */
export function listObjects(
  store: Store,
  t: ResourceType,
  namespace: string,
  params: URLSearchParams,
): KubeObject {
  const q = listQuery(t, namespace, params);
  let items = store.list(t, q.namespace).filter(q.selector);
  const cont = params.get("continue");
  if (cont) {
    let after: string;
    try {
      after = atob(cont);
    } catch {
      throw new ApiError("BadRequest", "continue key is not valid: illegal base64 data");
    }
    items = items.filter((o) => `${str(meta(o), "namespace")}/${str(meta(o), "name")}` > after);
  }
  const limit = Number(params.get("limit") ?? "0");
  const listMeta: KubeObject = { resourceVersion: String(store.resourceVersion) };
  if (limit > 0 && items.length > limit) {
    listMeta.remainingItemCount = items.length - limit;
    items = items.slice(0, limit);
    const last = meta(items[items.length - 1]);
    listMeta.continue = btoa(`${str(last, "namespace")}/${str(last, "name")}`);
  }
  return {
    kind: `${t.kind}List`,
    apiVersion: apiVersionOf(t),
    metadata: listMeta,
    items: items.map((o) => withType(t, o)),
  };
}

/** Options of the watch stream that are the server's, not the request's. */
export interface WatchOptions {
  /** Milliseconds between BOOKMARK events when the client allows them. */
  bookmarkMs: number;
  /** Ends the stream (server shutdown). */
  signal: AbortSignal;
}

/** A watch event as sent; `object` is already typed for the requested version. */
export interface WireEvent {
  type: string;
  object: KubeObject;
}

/** What the watch of `q` sends for a stored event, or undefined when it is not visible to it. */
function visible(t: ResourceType, q: ListQuery, ev: StoredEvent): WireEvent | undefined {
  const inNs = (o: KubeObject): boolean =>
    q.namespace === undefined || str(meta(o), "namespace") === q.namespace;
  const now = inNs(ev.object) && q.selector(ev.object);
  const before = ev.prev !== undefined && inNs(ev.prev) && q.selector(ev.prev);
  const object = withType(t, structuredClone(ev.object));
  if (ev.type !== "MODIFIED") return now ? { type: ev.type, object } : undefined;
  if (now) return { type: before ? "MODIFIED" : "ADDED", object };
  return before ? { type: "DELETED", object } : undefined;
}

/** The 410 Gone ERROR event for a resourceVersion older than the history. */
export function goneEvent(rv: string, oldest: number): WireEvent {
  return {
    type: "ERROR",
    object: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `too old resource version: ${rv} (${oldest})`,
      reason: "Expired",
      code: 410,
    },
  };
}

/**
 * The events of a watch request as a stream of encoded JSON lines, transformed by `encode` (which
 * may turn objects into Table rows). Ends after `timeoutSeconds`, on the server's signal, or when the
 * client goes away.
 *
 * @throws ApiError BadRequest when `resourceVersion` is not a number
 */
export function watchStream(
  store: Store,
  t: ResourceType,
  namespace: string,
  params: URLSearchParams,
  opts: WatchOptions,
  encode: (ev: WireEvent) => WireEvent = (ev) => ev,
): ReadableStream<Uint8Array> {
  const q = listQuery(t, namespace, params);
  const rvParam = params.get("resourceVersion") ?? "";
  if (rvParam !== "" && !/^\d+$/.test(rvParam)) {
    throw new ApiError("BadRequest", `invalid resource version: "${rvParam}"`);
  }
  const bookmarks = params.get("allowWatchBookmarks") === "true" || params.get("allowWatchBookmarks") === "1";
  const timeoutSeconds = Number(params.get("timeoutSeconds") ?? "0");
  const bytes = new TextEncoder();
  let cleanup = (): void => {};
  return new ReadableStream<Uint8Array>({
    start(controller): void {
      let closed = false;
      const send = (ev: WireEvent): void => {
        if (!closed) controller.enqueue(bytes.encode(JSON.stringify(encode(ev)) + "\n"));
      };
      const close = (): void => {
        if (closed) return;
        closed = true;
        cleanup();
        controller.close();
      };
      const unsubscribe = store.hub.subscribe(typeKeyOf(t), (ev) => {
        const out = visible(t, q, ev);
        if (out) send(out);
      });
      const timers: ReturnType<typeof setTimeout>[] = [];
      cleanup = () => {
        unsubscribe();
        for (const id of timers) clearTimeout(id), clearInterval(id);
        opts.signal.removeEventListener("abort", close);
      };
      opts.signal.addEventListener("abort", close);
      if (rvParam === "" || rvParam === "0") {
        for (const o of store.list(t, q.namespace).filter(q.selector)) {
          send({ type: "ADDED", object: withType(t, o) });
        }
      } else {
        const backlog = store.hub.since(typeKeyOf(t), Number(rvParam));
        if (!backlog) {
          send(goneEvent(rvParam, store.hub.compacted + 1));
          close();
          return;
        }
        for (const ev of backlog) {
          const out = visible(t, q, ev);
          if (out) send(out);
        }
      }
      if (bookmarks) {
        timers.push(setInterval(() => {
          send({
            type: "BOOKMARK",
            object: {
              kind: t.kind,
              apiVersion: apiVersionOf(t),
              metadata: { resourceVersion: String(store.resourceVersion) },
            },
          });
        }, opts.bookmarkMs));
      }
      if (timeoutSeconds > 0) timers.push(setTimeout(close, timeoutSeconds * 1000));
    },
    cancel(): void {
      cleanup();
    },
  });
}
