/**
 * The messages between the main thread ({@link ./signer_client.ts}) and the signer Worker
 * ({@link ./signer_worker.ts}). Every request carries an id that its reply repeats.
 *
 * @module
 */
import type { LeafRequest } from "./leaf_cert.ts";
import type { CaBundle } from "./root_ca.ts";

/**
 * An operation the Worker attempts on request, to show what its sandbox allows. Only diagnostics
 * (and the tests that prove the sandbox) send these; nothing is returned but the outcome.
 */
export type SandboxProbe =
  | { op: "read"; path: string }
  | { op: "write"; path: string }
  | { op: "net"; hostname: string; port: number }
  | { op: "env"; name: string }
  | { op: "run"; command: string }
  | { op: "sys" };

/** What a probe did: `allowed`, or the name of the error that stopped it (`NotCapable`, `PermissionDenied`, ...). */
export interface ProbeResult {
  /** Whether the operation succeeded. */
  allowed: boolean;
  /** The error's name when it did not. */
  errorName?: string;
  /** The error's message when it did not. */
  message?: string;
}

/** Main thread to Worker. */
export type SignerRequest =
  | { id: number; op: "load"; rootCaDir: string }
  | { id: number; op: "sign"; request: Omit<LeafRequest, "now"> }
  | { id: number; op: "renewRoot"; ttlMs: number }
  | { id: number; op: "probe"; probe: SandboxProbe };

/** An error as it crosses postMessage. */
export interface WireError {
  name: string;
  message: string;
  /** SignError's kind. */
  kind?: string;
  /** RootCaError's file and reason. */
  file?: string;
  reason?: string;
}

/** Worker to main thread. */
export type SignerReply =
  | { id: number; ok: true; bundle: CaBundle }
  | { id: number; ok: true; chain: string[] }
  | { id: number; ok: true; rootPem: string }
  | { id: number; ok: true; probe: ProbeResult }
  | { id: number; ok: false; error: WireError };
