/**
 * The messages between the main thread ({@link ./worker_client.ts}) and the webhook Worker
 * ({@link ./worker.ts}). Every request carries an id that its reply repeats.
 *
 * @module
 */
import type { ProbeResult, SandboxProbe } from "../ca/signer_protocol.ts";
import type { HandlerReply, InjectContext } from "./handler.ts";

/** What the Worker holds between requests: set at start and after every template reload. */
export interface WebhookConfig {
  inject: InjectContext;
  /** The mesh's root namespace, for validation. */
  rootNamespace: string;
}

/** Main thread to Worker. */
export type WebhookRequest =
  | { id: number; op: "configure"; config: WebhookConfig }
  | { id: number; op: "inject" | "validate"; body: string }
  | { id: number; op: "probe"; probe: SandboxProbe };

/** Worker to main thread. */
export type WebhookReply =
  | { id: number; ok: true; reply: HandlerReply }
  | { id: number; ok: true; probe: ProbeResult }
  | { id: number; ok: true; configured: true }
  | { id: number; ok: false; error: string };
