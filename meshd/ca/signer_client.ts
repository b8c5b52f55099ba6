/**
 * The main thread's side of the signer: starts {@link ./signer_worker.ts} as a Deno Worker with
 * narrowed permissions and talks to it by postMessage, one id per request.
 *
 * The Worker may read ROOT_CA_DIR and nothing else; it has no network, environment, write,
 * subprocess, FFI, system or remote-import permission. Creating it needs
 * `--unstable-worker-options` (the repository's deno.json enables it), and the main thread must
 * itself be allowed to read ROOT_CA_DIR: a Worker cannot get more than its parent has.
 *
 * @module
 */
import { resolve } from "node:path";
import { type LeafRequest, SignError, type SignErrorKind } from "./leaf_cert.ts";
import { type CaBundle } from "./root_ca.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
import type { ProbeResult, SandboxProbe, SignerReply, SignerRequest, WireError } from "./signer_protocol.ts";

export type { ProbeResult, SandboxProbe } from "./signer_protocol.ts";

/** Options of {@link SignerClient.start}. */
export interface SignerClientOptions {
  /** How long one request may take before it fails; default 30 s. */
  requestTimeoutMs?: number;
}

type Pending = {
  resolve: (r: SignerReply) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
};

type Distribute<T> = T extends unknown ? Omit<T, "id"> : never;

function revive(e: WireError): Error {
  if (e.name === "SignError") return new SignError(e.kind as SignErrorKind, e.message);
  if (e.name === "RootCaError") return new RootCaError(e.file ?? "", e.reason ?? e.message);
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/** A running signer Worker. */
export class SignerClient {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #timeoutMs: number;
  readonly #rootCaDir: string;
  #nextId = 1;
  #closed: Error | undefined;
  #bundle: CaBundle | undefined;

  private constructor(rootCaDir: string, options: SignerClientOptions) {
    this.#rootCaDir = rootCaDir;
    this.#timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.#worker = new Worker(new URL("./signer_worker.ts", import.meta.url), {
      type: "module",
      name: "meshd-ca-signer",
      deno: {
        permissions: {
          read: [rootCaDir],
          net: false,
          env: false,
          write: false,
          run: false,
          ffi: false,
          sys: false,
          import: false,
        },
      },
    });
    this.#worker.onmessage = (e: MessageEvent<SignerReply>) => {
      const p = this.#pending.get(e.data.id);
      if (!p) return;
      this.#pending.delete(e.data.id);
      clearTimeout(p.timer);
      p.resolve(e.data);
    };
    this.#worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.#fail(new Error(`the signer Worker failed: ${e.message}`));
    };
    this.#worker.onmessageerror = () => this.#fail(new Error("the signer Worker sent an unreadable message"));
  }

  /**
   * Starts the Worker and has it load and validate the CA in `rootCaDir`.
   *
   * @throws {RootCaError} when the CA material is missing or invalid (the Worker is stopped then)
   */
  static async start(rootCaDir: string, options: SignerClientOptions = {}): Promise<SignerClient> {
    const client = new SignerClient(resolve(rootCaDir), options);
    try {
      await client.reload();
    } catch (e) {
      client.close();
      throw e;
    }
    return client;
  }

  /** The CA's public material as the Worker last loaded it. */
  get bundle(): CaBundle {
    if (!this.#bundle) throw new Error("the signer has not loaded a CA");
    return this.#bundle;
  }

  /** Has the Worker load ROOT_CA_DIR again (after the operator replaced the files); the old CA stays on failure. */
  async reload(): Promise<CaBundle> {
    const reply = await this.#call({ op: "load", rootCaDir: this.#rootCaDir });
    if (!("bundle" in reply)) throw new Error("unexpected reply from the signer Worker");
    this.#bundle = reply.bundle;
    return reply.bundle;
  }

  /**
   * Issues a leaf.
   *
   * @returns leaf first, root bundle last
   * @throws {SignError} when the CSR or the request is refused or signing fails
   */
  async sign(request: Omit<LeafRequest, "now">): Promise<string[]> {
    const reply = await this.#call({ op: "sign", request });
    if (!("chain" in reply)) throw new Error("unexpected reply from the signer Worker");
    return reply.chain;
  }

  /**
   * Has the Worker sign a new self-signed root with the current root's key (root_renewal.ts); the
   * caller writes it to ROOT_CA_DIR and then calls {@link reload}.
   *
   * @param ttlMs the new root's lifetime (CA_SELF_SIGNED_CA_CERT_TTL)
   * @returns the new root, PEM
   * @throws {RootCaError} for a plugged-in CA or a non-positive TTL
   */
  async renewRoot(ttlMs: number): Promise<string> {
    const reply = await this.#call({ op: "renewRoot", ttlMs });
    if (!("rootPem" in reply)) throw new Error("unexpected reply from the signer Worker");
    return reply.rootPem;
  }

  /** Asks the Worker to attempt an operation its sandbox should forbid, and reports the outcome. */
  async probe(probe: SandboxProbe): Promise<ProbeResult> {
    const reply = await this.#call({ op: "probe", probe });
    if (!("probe" in reply)) throw new Error("unexpected reply from the signer Worker");
    return reply.probe;
  }

  /** Stops the Worker; pending requests fail. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#fail(new Error("the signer is closed"));
  }

  #fail(err: Error): void {
    this.#closed ??= err;
    this.#worker.terminate();
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.#pending.clear();
  }

  #call(body: Distribute<SignerRequest>): Promise<SignerReply & { ok: true }> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#nextId++;
    return new Promise<SignerReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`the signer Worker did not answer within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      this.#worker.postMessage({ id, ...body } as SignerRequest);
    }).then((reply) => {
      if (!reply.ok) throw revive(reply.error);
      return reply;
    });
  }
}
