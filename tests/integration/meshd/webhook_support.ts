/**
 * Helpers of the webhook tests against the test API server: meshd's webhooks on a free port, and
 * the caBundle patcher's two requests over Deno's fetch with the API server's CA and admin token.
 *
 * @module
 */
import client from "prom-client";
import type { StartedKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import type { CertificateAuthority } from "../../../meshd/ca/mod.ts";
import type { WebhookConfigApi } from "../../../meshd/webhooks/ca_bundle.ts";
import { type RunningWebhooks, startWebhooks } from "../../../meshd/webhooks/mod.ts";

/** A logger that drops everything. */
export const QUIET = { debug() {}, info() {}, warn() {}, error() {} };

/** meshd's webhooks of `revision` (default: the default one) on 127.0.0.1:0 with the default template (`dir` holds none). */
export function startTestWebhooks(
  ca: CertificateAuthority,
  dir: string,
  revision?: string,
): Promise<RunningWebhooks> {
  return startWebhooks(ca, {
    address: { host: "127.0.0.1", port: 0 },
    namespace: "mesh-system",
    domain: "cluster.local",
    rootNamespace: "mesh-system",
    injectEnabled: true,
    nativeSidecars: false,
    tokenAudiences: "mesh-ca",
    revision,
    injectionPath: `${dir}/none`,
    registry: new client.Registry(),
    caLog: QUIET,
    log: QUIET,
  });
}

/** GET (undefined unless 200), PUT and POST (the status) against the test API server. */
export function restApi(
  api: StartedKubeApi,
  http: Deno.HttpClient,
): WebhookConfigApi & { post(p: string, b: unknown): Promise<number> } {
  const headers = {
    authorization: `Bearer ${api.server.token}`,
    "content-type": "application/json",
    accept: "application/json",
  };
  const send = async (method: string, path: string, body: unknown): Promise<number> => {
    const res = await fetch(api.url + path, { method, headers, client: http, body: JSON.stringify(body) });
    await res.body?.cancel();
    return res.status;
  };
  return {
    async get(path) {
      const res = await fetch(api.url + path, { headers, client: http });
      if (res.status !== 200) {
        await res.body?.cancel();
        return undefined;
      }
      return await res.json();
    },
    put: (path, body) => send("PUT", path, body),
    post: (path, body) => send("POST", path, body),
  };
}
