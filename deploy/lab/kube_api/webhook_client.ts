/**
 * Calls one admission webhook as kube-apiserver does: POST of an AdmissionReview v1 as JSON over
 * HTTPS to `clientConfig.url`, or to `clientConfig.service` resolved through the Service's
 * EndpointSlices (first ready address, the slice port named as the Service port) with the TLS server
 * name `<service>.<namespace>.svc`, trusting only `clientConfig.caBundle` (the system roots when it is
 * empty), within `timeoutSeconds` (default 10).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import * as https from "node:https";
import type { ObjectApi } from "./objects.ts";
import { isObject, type KubeObject, meta, str } from "./types.ts";

/** Where and how to reach a webhook. */
export interface WebhookTarget {
  host: string;
  port: number;
  path: string;
  servername: string;
  ca?: string;
}

/**
 * The target of a webhook's `clientConfig`.
 *
 * @throws Error when neither url nor service is set, or the service has no ready endpoint
 */
export function resolveTarget(objects: ObjectApi, clientConfig: KubeObject): WebhookTarget {
  const caBundle = str(clientConfig, "caBundle");
  const ca = caBundle
    ? new TextDecoder().decode(Uint8Array.from(atob(caBundle), (c) => c.charCodeAt(0)))
    : undefined;
  if (str(clientConfig, "url")) {
    const u = new URL(str(clientConfig, "url"));
    if (u.protocol !== "https:") throw new Error(`webhook url ${u} is not https`);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    return { host, port: Number(u.port || 443), path: u.pathname + u.search, servername: host, ca };
  }
  const svc = isObject(clientConfig.service) ? clientConfig.service : undefined;
  if (!svc) throw new Error("clientConfig has neither url nor service");
  const ns = str(svc, "namespace");
  const name = str(svc, "name");
  const wanted = typeof svc.port === "number" ? svc.port : 443;
  const service = objects.store.get(objects.registry.find("", "v1", "services")!, ns, name);
  if (!service) throw new Error(`service "${ns}/${name}" not found`);
  const spec = isObject(service.spec) ? service.spec : {};
  const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObject) : [];
  const sp = ports.find((p) => p.port === wanted);
  if (!sp) throw new Error(`service "${ns}/${name}" has no port ${wanted}`);
  const sliceType = objects.registry.find("discovery.k8s.io", "v1", "endpointslices")!;
  for (const slice of objects.store.list(sliceType, ns)) {
    if (
      meta(slice).labels === undefined ||
      (meta(slice).labels as KubeObject)["kubernetes.io/service-name"] !== name
    ) continue;
    const slicePorts = Array.isArray(slice.ports) ? slice.ports.filter(isObject) : [];
    const port = slicePorts.find((p) => str(p, "name") === str(sp, "name"))?.port ??
      (typeof sp.targetPort === "number" ? sp.targetPort : sp.port);
    const endpoints = Array.isArray(slice.endpoints) ? slice.endpoints.filter(isObject) : [];
    const ready = endpoints.find((e) => !(isObject(e.conditions) && e.conditions.ready === false));
    const address = ready && Array.isArray(ready.addresses) ? ready.addresses[0] : undefined;
    if (typeof address === "string" && typeof port === "number") {
      return { host: address, port, path: str(svc, "path") || "/", servername: `${name}.${ns}.svc`, ca };
    }
  }
  throw new Error(`no endpoints available for service "${ns}/${name}"`);
}

/**
 * POSTs `review` to the target and resolves to the parsed answer.
 *
 * @throws Error on a connection, TLS, timeout, HTTP status or JSON error (the message says which)
 */
export function callWebhook(target: WebhookTarget, review: KubeObject, timeoutMs: number): Promise<unknown> {
  const body = Buffer.from(JSON.stringify(review));
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: target.host,
      port: target.port,
      path: target.path,
      method: "POST",
      servername: /^[\d.]+$|:/.test(target.servername) ? undefined : target.servername,
      ca: target.ca,
      agent: false,
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        "content-length": body.length,
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString("utf8");
        if ((res.statusCode ?? 0) >= 300) {
          return reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
        }
        try {
          resolve(JSON.parse(text));
        } catch (e) {
          reject(new Error(`the answer is not JSON: ${(e as Error).message}`));
        }
      });
      res.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`context deadline exceeded (${timeoutMs} ms)`));
    }, timeoutMs);
    req.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(body);
  });
}
