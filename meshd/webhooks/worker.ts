/**
 * The webhook Worker: parses every AdmissionReview and builds every response (handler.ts), so that
 * a bug in handling what the API server (or anyone reaching --httpsAddr) sends cannot reach the
 * network, files, environment or subprocesses: worker_client.ts starts it with every Deno
 * permission denied. Its template and settings arrive by message.
 *
 * @module
 */
import { runProbe } from "../ca/sandbox_probe.ts";
import { handleInject, handleValidate } from "./handler.ts";
import type { WebhookConfig, WebhookReply, WebhookRequest } from "./worker_protocol.ts";

let config: WebhookConfig | undefined;

async function handle(msg: WebhookRequest): Promise<WebhookReply> {
  try {
    switch (msg.op) {
      case "configure":
        config = msg.config;
        return { id: msg.id, ok: true, configured: true };
      case "inject":
      case "validate":
        if (!config) throw new Error("the webhook Worker is not configured");
        return {
          id: msg.id,
          ok: true,
          reply: msg.op === "inject"
            ? handleInject(msg.body, config.inject)
            : handleValidate(msg.body, config.rootNamespace),
        };
      case "probe":
        return { id: msg.id, ok: true, probe: await runProbe(msg.probe) };
      default:
        throw new Error(`unknown operation ${(msg as { op: unknown }).op}`);
    }
  } catch (e) {
    return { id: msg.id, ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

/** The Worker's global scope, typed here (as the signer Worker does) rather than with `lib="deno.worker"`. */
const scope = self as unknown as {
  onmessage: ((e: MessageEvent<WebhookRequest>) => void) | null;
  postMessage(message: WebhookReply): void;
};

scope.onmessage = async (e) => {
  scope.postMessage(await handle(e.data));
};
