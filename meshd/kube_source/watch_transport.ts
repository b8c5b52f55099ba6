/**
 * The watch requests of meshd's informers, through {@link ApiClient} (Deno's fetch, HTTP/1.1) in place
 * of client-node's undici transport (shared/internal/kube/api_client.ts says why); the informer logic (list, watch from
 * the resourceVersion, re-list on 410 Gone, the object cache) stays client-node's ListWatch.
 *
 * The server ends each watch after `timeoutSeconds` (as client-go asks, 5 to 10 minutes), and a watch
 * that receives nothing for that long plus 30 s is aborted as timed out, so a connection that died
 * without a FIN is noticed too; the informer then resumes from its last resourceVersion.
 *
 * @module
 */
import { type KubeConfig, Watch } from "@kubernetes/client-node";
import type { ApiClient } from "../../shared/internal/kube/api_client.ts";

/** Watch options: the server-side timeout range, seconds. */
const MIN_TIMEOUT_S = 300;
const MAX_TIMEOUT_S = 600;
const SLACK_MS = 30_000;

/** client-node's Watch over Deno's fetch; once stopped, no watch starts and the open ones end. */
export class DenoWatch extends Watch {
  readonly #api: ApiClient;
  readonly #open = new Set<{ controller: AbortController; ended: Promise<void> }>();
  #stopped = false;

  readonly #onGone: () => void;

  /**
   * @param config the API server and credentials (client-node's Watch keeps it)
   * @param api the transport
   * @param onGone the server answered 410 Gone (the resourceVersion is older than it keeps): the
   *   informer re-lists
   */
  constructor(config: KubeConfig, api: ApiClient, onGone: () => void = () => {}) {
    super(config);
    this.#api = api;
    this.#onGone = onGone;
  }

  /** Starts one watch; `done` is called exactly once, when it ends for any reason. */
  override async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    if (this.#stopped) return controller;
    const timeoutS = MIN_TIMEOUT_S + Math.floor(Math.random() * (MAX_TIMEOUT_S - MIN_TIMEOUT_S));
    const params: Record<string, string> = {
      watch: "true",
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeoutS),
    };
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params[k] = String(v);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutS * 1000 + SLACK_MS);
    let resolveEnded!: () => void;
    const entry = { controller, ended: new Promise<void>((r) => (resolveEnded = r)) };
    this.#open.add(entry);
    const end = (err: unknown) => {
      clearTimeout(timer);
      this.#open.delete(entry);
      resolveEnded();
      done(timedOut ? new DOMException("the watch timed out", "TimeoutError") : err);
    };
    try {
      const response = await this.#api.get(path, params, controller.signal);
      if (response.status !== 200) {
        await response.body?.cancel();
        // A resourceVersion too old may be refused up front rather than by an ERROR event.
        if (response.status === 410) this.#onGone();
        end(
          Object.assign(new Error(`${response.status} ${response.statusText}`), {
            statusCode: response.status,
          }),
        );
        return controller;
      }
      void this.#pump(response.body!, callback, controller.signal).then(() => end(null), end);
    } catch (e) {
      end(e);
    }
    return controller;
  }

  /** Ends every watch and waits until each has called its `done`; no new watch starts. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const open = [...this.#open];
    for (const w of open) w.controller.abort();
    await Promise.all(open.map((w) => w.ended));
  }

  /**
   * Reads the events until the stream ends. An abort cancels the reader itself: measured here, an
   * aborted fetch did not always end a body being read through pipeThrough, and meshd then never
   * finished shutting down.
   */
  async #pump(
    body: ReadableStream<Uint8Array>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const reader = body.pipeThrough(new TextDecoderStream()).pipeThrough(lineSplitter()).getReader();
    const onAbort = () => void reader.cancel().catch(() => {});
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal.aborted) {
        const { value: line, done } = await reader.read();
        if (done) break;
        if (line.trim() === "") continue;
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line);
        } catch {
          throw new Error(`a watch event is not JSON: ${line.slice(0, 80)}`);
        }
        if (typeof event.type !== "string") continue;
        if (event.type === "ERROR" && isGone(event.object)) this.#onGone();
        callback(event.type, event.object, event);
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}

function isGone(status: unknown): boolean {
  return typeof status === "object" && status !== null && "code" in status && status.code === 410;
}

/** Splits a text stream into lines (watch events are newline-delimited JSON). */
function lineSplitter(): TransformStream<string, string> {
  let rest = "";
  return new TransformStream({
    transform(chunk, out) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop() ?? "";
      for (const p of parts) out.enqueue(p);
    },
    flush(out) {
      if (rest !== "") out.enqueue(rest);
    },
  });
}
