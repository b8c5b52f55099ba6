/**
 * The HTTPS server (HTTP/1.1, see https_server.ts) with the self-made serving certificate,
 * bearer-token authentication (the admin token of the kubeconfig, or a service-account token this
 * server issued for the API audience), the default namespaces, and the routes.
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";
import { listenHttps } from "./https_server.ts";
import { admissionChain } from "./admission.ts";
import { ObjectApi, type UserInfo } from "./objects.ts";
import { makeServerPki } from "./pki.ts";
import { Registry } from "./registry.ts";
import { json, route } from "./routes.ts";
import { handlePortForwardUpgrade, type PortForwardContext } from "./port_forward.ts";
import { Store } from "./store.ts";
import { TokenService } from "./tokens.ts";
import { ApiError, statusObject } from "./types.ts";

/** Settings of {@link serveKubeApi}. */
export interface KubeApiOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Address to listen on (default 127.0.0.1). */
  hostname?: string;
  /** Events kept for watch resumption; an older resourceVersion gets 410 Gone (default 1000). */
  historySize?: number;
  /** Milliseconds between BOOKMARK events of watches that allow them (default 5000). */
  bookmarkMs?: number;
  /** More DNS names or IPs for the serving certificate. */
  extraNames?: string[];
  /** Log each request to stderr. */
  verbose?: boolean;
  /**
   * Called with each request's method, URL and header lines as received, before it is handled (for
   * tests that check what a client sent, e.g. meshctl's Impersonate-* headers).
   */
  requestLog?: (entry: RequestLogEntry) => void;
}

/** A request as {@link KubeApiOptions.requestLog} sees it. */
export interface RequestLogEntry {
  method: string;
  url: string;
  /** Header lines in the order received, names as sent; a repeated header is several lines. */
  headers: [string, string][];
}

/** A running server. */
export interface KubeApiServer {
  /** https://<host>:<port> */
  url: string;
  caPem: string;
  /** The admin bearer token (full access: no RBAC is enforced). */
  token: string;
  objects: ObjectApi;
  tokens: TokenService;
  stop(): Promise<void>;
}

const ADMIN: UserInfo = { username: "kubernetes-admin", groups: ["system:masters", "system:authenticated"] };
const DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];
const UNAUTHENTICATED_PATHS = new Set(["/healthz", "/livez", "/readyz"]);

/** Compares a presented token with the admin token in time independent of where they differ. */
function sameSecret(presented: string, secret: string): boolean {
  const a = new TextEncoder().encode(presented);
  const b = new TextEncoder().encode(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Starts the server; resolves once it listens. */
export async function serveKubeApi(opts: KubeApiOptions = {}): Promise<KubeApiServer> {
  const pki = await makeServerPki(opts.extraNames);
  const token = crypto.randomUUID().replaceAll("-", "");
  const store = new Store(opts.historySize ?? 1000);
  const registry = new Registry();
  const stopping = new AbortController();
  const objects: ObjectApi = new ObjectApi(store, registry, (attrs) => admissionChain(objects, attrs));
  const tokens = await TokenService.create(objects);
  const nsType = registry.find("", "v1", "namespaces")!;
  for (const name of DEFAULT_NAMESPACES) await objects.create(nsType, "", { metadata: { name } }, ADMIN);

  const authenticate = async (req: Request): Promise<UserInfo | undefined> => {
    const m = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "");
    if (!m) return undefined;
    if (sameSecret(m[1], token)) return ADMIN;
    const r = await tokens.authenticate(m[1]);
    return "user" in r ? r.user : undefined;
  };
  const ctx = {
    objects,
    watch: { bookmarkMs: opts.bookmarkMs ?? 5000, signal: stopping.signal },
    tokenRequest: (ns: string, name: string, body: Record<string, unknown>) => tokens.request(ns, name, body),
    tokenReview: (body: Record<string, unknown>) => tokens.review(body),
  };
  const handler = async (req: Request, rawHeaders: [string, string][]): Promise<Response> => {
    opts.requestLog?.({ method: req.method, url: req.url, headers: rawHeaders });
    const path = new URL(req.url).pathname;
    let res: Response;
    try {
      if (UNAUTHENTICATED_PATHS.has(path)) res = new Response("ok");
      else {
        const user = await authenticate(req);
        res = user
          ? await route(ctx, req, user)
          : json(statusObject(401, "Unauthorized", "Unauthorized"), 401);
      }
    } catch (e) {
      const err = e instanceof ApiError
        ? e
        : new ApiError("InternalError", `Internal error occurred: ${(e as Error).message}`);
      res = json(err.toStatus(), err.code);
    }
    if (opts.verbose) console.error(`${new Date().toISOString()} ${req.method} ${req.url} ${res.status}`);
    return res;
  };
  const hostname = opts.hostname ?? "127.0.0.1";
  const podType = registry.find("", "v1", "pods")!;
  const portForward: PortForwardContext = {
    authenticated: async (authorization) =>
      (await authenticate(new Request("https://x/", { headers: { authorization: authorization ?? "" } }))) !==
        undefined,
    podIp: (namespace, name) => {
      const pod = store.get(podType, namespace, name) as { status?: { podIP?: string } } | undefined;
      return pod?.status?.podIP;
    },
  };
  const server = await listenHttps(
    { port: opts.port ?? 0, hostname, certPem: pki.certPem, keyPem: pki.keyPem },
    handler,
    (req, socket) => handlePortForwardUpgrade(portForward, req, socket),
  );
  const port = server.port;
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `https://${host}:${port}`,
    caPem: pki.caPem,
    token,
    objects,
    tokens,
    async stop(): Promise<void> {
      stopping.abort();
      await server.close();
    },
  };
}
