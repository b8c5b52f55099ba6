/**
 * meshd's webhooks (issue 14, part 2): the HTTPS server on --httpsAddr serving sidecar injection
 * (`/inject`) and resource validation (`/validate`), with a serving certificate from meshd's CA,
 * renewed as the gRPC one is, and the admission logic in a Worker without permissions. See
 * README.md beside this file.
 *
 * @module
 */
import { startServingCertificate } from "../ca/maintenance.ts";
import type { CertificateAuthority } from "../ca/mod.ts";
import type { ListenAddress } from "../../shared/internal/cli/go_values.ts";
import type client from "prom-client";
import { createWebhookMetrics } from "./metrics.ts";
import { startWebhookServer, type WebhookLog } from "./server.ts";
import { loadTemplate, meshdServiceName } from "../../shared/internal/inject/template.ts";
import { WebhookWorker } from "./worker_client.ts";
import type { WebhookConfig } from "./worker_protocol.ts";

/** Where meshd reads the injection template (Istio's `/var/lib/istio/inject`, relative as istiod's). */
export const DEFAULT_INJECTION_PATH = "./var/lib/mesh/inject";

/**
 * meshd's Service names in its certificates: `meshd.<ns>.svc[.<domain>]`, and for a revision also
 * `meshd-<revision>.<ns>.svc[.<domain>]` (its own Service, which its webhooks and pods call).
 */
export function meshdDnsNames(namespace: string, domain: string, revision: string | undefined): string[] {
  const names = [...new Set(["meshd", meshdServiceName(revision)])];
  return names.flatMap((n) => [`${n}.${namespace}.svc`, `${n}.${namespace}.svc.${domain}`]);
}

/** Options of {@link startWebhooks}. */
export interface WebhooksOptions {
  address: ListenAddress;
  /** meshd's namespace and cluster domain: the certificate's names (`meshd.<ns>.svc[.<domain>]`). */
  namespace: string;
  domain: string;
  rootNamespace: string;
  /** INJECT_ENABLED. */
  injectEnabled: boolean;
  /** ENABLE_NATIVE_SIDECARS. */
  nativeSidecars: boolean;
  /** TOKEN_AUDIENCES (comma list): its first audience goes into the projected token. */
  tokenAudiences: string;
  /** REVISION; empty or undefined is `default`. */
  revision: string | undefined;
  /** The template directory or ConfigMap file; default {@link DEFAULT_INJECTION_PATH}. */
  injectionPath?: string;
  /** meshd's metrics registry. */
  registry: client.Registry;
  /** The CA logger for the certificate, the webhooks logger for the rest. */
  caLog: WebhookLog & { error(message: string): void };
  log: WebhookLog & { error(message: string): void };
}

/** Running webhooks. */
export interface RunningWebhooks {
  port: number;
  /** Stops the server, the certificate renewal and the Worker. */
  stop(): Promise<void>;
}

/**
 * Starts the webhooks.
 *
 * @throws Error naming the file and field when the injection template is invalid, or when the port cannot be bound
 */
export async function startWebhooks(ca: CertificateAuthority, o: WebhooksOptions): Promise<RunningWebhooks> {
  const path = o.injectionPath ?? DEFAULT_INJECTION_PATH;
  const template = await loadTemplate(path, o.namespace, o.revision);
  const audience = o.tokenAudiences.split(",").map((a) => a.trim()).find((a) => a !== "");
  if (!audience) {
    throw new Error("TOKEN_AUDIENCES: empty; the injected service-account token needs an audience");
  }
  const config: WebhookConfig = {
    rootNamespace: o.rootNamespace,
    inject: {
      enabled: o.injectEnabled,
      template,
      settings: {
        nativeSidecars: o.nativeSidecars,
        tokenAudience: audience,
        revision: o.revision || "default",
      },
    },
  };
  if (!o.injectEnabled) o.log.info("INJECT_ENABLED is false: /inject admits every pod unchanged");
  const serving = await startServingCertificate(ca, {
    dnsNames: [...meshdDnsNames(o.namespace, o.domain, o.revision), "localhost"],
    ipAddresses: ["127.0.0.1"],
  }, o.caLog);
  const worker = new WebhookWorker(config);
  try {
    const server = await startWebhookServer({
      address: o.address,
      certificate: serving.renewer.material,
      worker,
      metrics: createWebhookMetrics(o.registry),
      log: o.log,
    });
    const unsubscribe = serving.renewer.onUpdate((m) => server.updateCertificate(m));
    o.log.info(
      `injection template from ${path}: image ${template.image}, policy ${template.policy}; ` +
        `native sidecars ${o.nativeSidecars}`,
    );
    return {
      port: server.port,
      stop: async () => {
        unsubscribe();
        serving.stop();
        await server.close();
        worker.close();
      },
    };
  } catch (e) {
    serving.stop();
    worker.close();
    throw new Error(`--httpsAddr: cannot serve the webhooks: ${(e as Error).message}`);
  }
}
