/**
 * The signer Worker: holds the CA key and signs leaves. meshd starts it through
 * {@link ./signer_client.ts} with narrowed Deno permissions (read ROOT_CA_DIR only; no network,
 * environment, write, subprocess, FFI, system information or remote import), so that a bug in CSR
 * parsing cannot reach the network or other files, and the key never has to leave this Worker.
 *
 * @module
 */
import { issueLeaf, SignError } from "./leaf_cert.ts";
import { type LoadedCa, loadRootCa } from "./root_ca.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
import { renewSelfSignedRoot } from "./root_renewal.ts";
import { runProbe } from "./sandbox_probe.ts";
import type { SignerReply, SignerRequest, WireError } from "./signer_protocol.ts";

let ca: LoadedCa | undefined;

function wire(e: unknown): WireError {
  if (e instanceof SignError) return { name: e.name, message: e.message, kind: e.kind };
  if (e instanceof RootCaError) return { name: e.name, message: e.message, file: e.file, reason: e.reason };
  if (e instanceof Error) return { name: e.name, message: e.message };
  return { name: "Error", message: String(e) };
}

async function handle(msg: SignerRequest): Promise<SignerReply> {
  try {
    switch (msg.op) {
      case "load":
        ca = await loadRootCa(msg.rootCaDir);
        return { id: msg.id, ok: true, bundle: ca.bundle };
      case "sign":
        if (!ca) throw new SignError("sign", "the CA is not loaded");
        return { id: msg.id, ok: true, chain: await issueLeaf(ca, msg.request) };
      case "renewRoot":
        if (!ca) throw new SignError("sign", "the CA is not loaded");
        return { id: msg.id, ok: true, rootPem: await renewSelfSignedRoot(ca, { ttlMs: msg.ttlMs }) };
      case "probe":
        return { id: msg.id, ok: true, probe: await runProbe(msg.probe) };
      default:
        throw new Error(`unknown operation ${(msg as { op: unknown }).op}`);
    }
  } catch (e) {
    return { id: msg.id, ok: false, error: wire(e) };
  }
}

/** The Worker's global scope, typed here rather than with `lib="deno.worker"`, which would clash with the window types of the modules checked together with this one. */
const scope = self as unknown as {
  onmessage: ((e: MessageEvent<SignerRequest>) => void) | null;
  postMessage(message: SignerReply): void;
};

scope.onmessage = async (e) => {
  scope.postMessage(await handle(e.data));
};
