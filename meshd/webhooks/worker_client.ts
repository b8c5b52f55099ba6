/**
 * The main thread's side of the webhook Worker (worker.ts): starts it with every Deno permission
 * denied (no read, write, network, subprocess, FFI, system information or remote import, and no
 * environment but npm:yaml's two debug switches: its input arrives by message) and talks to it by postMessage, one id per
 * request. A Worker that fails is replaced at the next request; requests in flight fail.
 * Needs `--unstable-worker-options` (enabled in deno.json).
 *
 * @module
 */
import type { ProbeResult, SandboxProbe } from "../ca/signer_protocol.ts";
import type { HandlerReply } from "./handler.ts";
import type { WebhookConfig, WebhookReply, WebhookRequest } from "./worker_protocol.ts";

/**
 * The Worker's permissions: nothing but the two environment variables npm:yaml reads (its debug
 * switches LOG_TOKENS and LOG_STREAM; validation parses with it, and a denied read throws).
 */
export const WEBHOOK_WORKER_PERMISSIONS: Deno.PermissionOptionsObject = {
  read: false,
  write: false,
  net: false,
  env: ["LOG_TOKENS", "LOG_STREAM"],
  run: false,
  ffi: false,
  sys: false,
  import: false,
};

type Distribute<T> = T extends unknown ? Omit<T, "id"> : never;

type Pending = {
  resolve: (r: WebhookReply) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
};

/** A running webhook Worker. */
export class WebhookWorker {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  readonly #timeoutMs: number;
  #config: WebhookConfig;
  #nextId = 1;
  #closed = false;

  /** @param timeoutMs how long one request may take; default 10 s (the API server's own webhook timeout) */
  constructor(config: WebhookConfig, timeoutMs = 10_000) {
    this.#config = config;
    this.#timeoutMs = timeoutMs;
  }

  #start(): Worker {
    const worker = new Worker(new URL("./worker.ts", import.meta.url), {
      type: "module",
      name: "meshd-webhooks",
      deno: { permissions: WEBHOOK_WORKER_PERMISSIONS },
    });
    worker.onmessage = (e: MessageEvent<WebhookReply>) => {
      const p = this.#pending.get(e.data.id);
      if (!p) return;
      this.#pending.delete(e.data.id);
      clearTimeout(p.timer);
      p.resolve(e.data);
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.#restart(new Error(`the webhook Worker failed: ${e.message}`));
    };
    this.#worker = worker;
    this.#post({ op: "configure", config: this.#config }).catch(() => {});
    return worker;
  }

  #restart(err: Error): void {
    this.#worker?.terminate();
    this.#worker = undefined;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.#pending.clear();
  }

  /** Replaces the template and settings (after the template file changed). */
  async configure(config: WebhookConfig): Promise<void> {
    this.#config = config;
    await this.#post({ op: "configure", config });
  }

  /**
   * Handles one `/inject` or `/validate` body.
   *
   * @throws Error when the Worker failed or did not answer in time
   */
  async handle(op: "inject" | "validate", body: string): Promise<HandlerReply> {
    const reply = await this.#post({ op, body });
    if (!("reply" in reply)) throw new Error("unexpected reply from the webhook Worker");
    return reply.reply;
  }

  /** Has the Worker attempt what its sandbox should forbid (tests of the sandbox). */
  async probe(probe: SandboxProbe): Promise<ProbeResult> {
    const reply = await this.#post({ op: "probe", probe });
    if (!("probe" in reply)) throw new Error("unexpected reply from the webhook Worker");
    return reply.probe;
  }

  /** Stops the Worker; requests in flight fail. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#restart(new Error("the webhook Worker is closed"));
  }

  #post(body: Distribute<WebhookRequest>): Promise<WebhookReply & { ok: true }> {
    if (this.#closed) return Promise.reject(new Error("the webhook Worker is closed"));
    const worker = this.#worker ?? this.#start();
    const id = this.#nextId++;
    return new Promise<WebhookReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        // A Worker stuck in a loop answers nothing more: replace it.
        this.#restart(new Error(`the webhook Worker did not answer within ${this.#timeoutMs} ms`));
        reject(new Error(`the webhook Worker did not answer within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, ...body } satisfies WebhookRequest);
    }).then((reply) => {
      if (!reply.ok) throw new Error(reply.error);
      return reply;
    });
  }
}
