/**
 * The proxy's JWKS fetcher (DISCO_JWT_ENABLE_REMOTE_JWKS `hybrid` or `proxy`, after Envoy's
 * jwt_authn remote_jwks with async fetch): for every JWT provider that meshd marks `jwksFetcher:
 * PROXY`, the proxy fetches `jwksUri` itself, once per process on the main thread, refreshes it every
 * `jwksRefreshIntervalMs` (meshd's DISCO_JWT_PUB_KEY_REFRESH_INTERVAL), retries failures with
 * backoff from 1 s, and keeps the last good key set (shared/internal/jwks/refresher.ts, meshd's code). The
 * keys go into the snapshot that every worker receives (`RuntimeSnapshot.jwks`, by URI; the filter
 * chain puts them into those providers), so workers never fetch. Before the first good fetch the
 * provider has no keys: its tokens get 401, requests without a token pass (Envoy with async fetch
 * and a fast listener).
 *
 * How a `jwksUri` is reached, as Envoy reaches its remote_jwks cluster: a host that is a service of
 * the registry (the outbound resolution: Kubernetes DNS names, VIPs) goes to that service's
 * endpoints in turn, with mutual TLS and secure naming when the endpoint is proxied (HTTP inside the
 * mesh's TLS), else plain TCP (or TLS checked against the URI's host for `https`); any other host is
 * dialled directly (DNS, system roots), where Istio's Envoy would have no cluster and fail.
 *
 * @module
 */
import tls from "node:tls";
import { httpGet } from "../../shared/internal/jwks/http_get.ts";
import { dialsMtls } from "../../shared/policy/auto_mtls.ts";
import {
  type KeySetFetchEvent,
  KeySetRefresher,
  type KeySetSource,
  type KeySetStatus,
} from "../../shared/internal/jwks/refresher.ts";
import { mtlsDialer, plainDialer } from "../outbound/endpoint_pool.ts";
import { MESH_HTTP1_ALPN } from "../tls/mesh_alpn.ts";
import { resolveHost } from "../outbound/resolve.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type net from "node:net";

/** The `user-agent` of the proxy's fetches (a JWKS server's log tells proxies from meshd). */
export const PROXY_JWKS_USER_AGENT = "mesh-proxy-jwks-fetcher";

/** A decoded mesh.v1.JwtProvider, as far as the fetcher reads it. */
interface ProviderMessage {
  jwksUri?: string;
  jwksFetcher?: string;
  jwksRefreshIntervalMs?: number;
  jwksFetchTimeoutMs?: number;
}

/** What the fetcher reads of the current config to reach mesh hosts. */
export type DialContext = Pick<RuntimeSnapshot, "services" | "certificate" | "workload">;

/** Fetch counters, as Envoy's jwt_authn `jwks_fetch_success` and `jwks_fetch_failed`. */
export interface JwksFetchCounters {
  success: number;
  failed: number;
}

/** Options of {@link ProxyJwksFetcher}. */
export interface ProxyJwksFetcherOptions {
  /** The config in force (services, certificate, own namespace), read at every fetch. */
  context(): DialContext;
  /** A key set changed (first good fetch included): publish a new snapshot. */
  onChange(): void;
  /** Every fetch (logs). */
  onFetch?(event: KeySetFetchEvent): void;
  /** First retry delay after a failure, ms; default 1000. */
  retryInitialMs?: number;
}

const DEFAULT_REFRESH_MS = 20 * 60_000;
const DEFAULT_TIMEOUT_MS = 5000;

function providersOf(jwtPolicies: RuntimeSnapshot["jwtPolicies"]): ProviderMessage[] {
  return Object.values(jwtPolicies).flatMap((p) => (p.providers ?? []) as ProviderMessage[]);
}

const byProxy = (p: ProviderMessage) => p.jwksFetcher === "PROXY" && !!p.jwksUri;

/** Fetches the key sets that meshd leaves to this proxy. */
export class ProxyJwksFetcher {
  readonly #o: ProxyJwksFetcherOptions;
  readonly #refresher: KeySetRefresher;
  readonly #counters: JwksFetchCounters = { success: 0, failed: 0 };
  #turn = 0;

  /** @param options the config to reach mesh hosts with, and where changes and fetches are reported */
  constructor(options: ProxyJwksFetcherOptions) {
    this.#o = options;
    this.#refresher = new KeySetRefresher({
      refreshIntervalMs: DEFAULT_REFRESH_MS,
      retryInitialMs: options.retryInitialMs,
      fetch: (s) => this.#fetch(s),
      onChange: options.onChange,
      onFetch: (e) => {
        if (e.ok) this.#counters.success++;
        else this.#counters.failed++;
        options.onFetch?.(e);
      },
    });
  }

  /** Tracks exactly the `jwksUri`s of the providers marked `jwksFetcher: PROXY`. */
  sync(jwtPolicies: RuntimeSnapshot["jwtPolicies"]): void {
    const sources: KeySetSource[] = providersOf(jwtPolicies).filter(byProxy).map((p) => ({
      key: p.jwksUri!,
      timeoutMs: p.jwksFetchTimeoutMs || DEFAULT_TIMEOUT_MS,
      refreshIntervalMs: p.jwksRefreshIntervalMs || DEFAULT_REFRESH_MS,
    }));
    this.#refresher.sync(sources);
  }

  /** The last good key set (JSON text) of every source that has one, by `jwksUri`. */
  keys(): Map<string, string> {
    return this.#refresher.keys();
  }

  /** Where every source stands, and the fetch counters. */
  status(): { sources: KeySetStatus[]; counters: JwksFetchCounters } {
    return { sources: this.#refresher.status(), counters: { ...this.#counters } };
  }

  #fetch(s: KeySetSource): Promise<string> {
    const options = { timeoutMs: s.timeoutMs, userAgent: PROXY_JWKS_USER_AGENT };
    const url = new URL(s.key);
    const ctx = this.#o.context();
    const https = url.protocol === "https:";
    const r = resolveHost(url.host, ctx.workload?.namespace, ctx, https ? 443 : 80);
    if (!r.ok) {
      // A registry host with the wrong port is an error; a host the registry does not know is dialled.
      if (r.status === 404 && r.reason.startsWith("service ")) return Promise.reject(new Error(r.reason));
      return httpGet(s.key, options);
    }
    const endpoints = r.service.endpoints.filter((e) => e.ports[String(r.port.number)] !== undefined);
    if (endpoints.length === 0) return Promise.reject(new Error(`service ${r.key} has no endpoint`));
    const e = endpoints[this.#turn++ % endpoints.length];
    const port = e.ports[String(r.port.number)];
    let dial: () => Promise<net.Socket>;
    if (dialsMtls(e, r.port.number) && ctx.certificate) {
      dial = mtlsDialer({
        host: e.address,
        port,
        cert: ctx.certificate,
        identity: e.identity,
        timeoutMs: s.timeoutMs,
        alpn: MESH_HTTP1_ALPN,
      });
    } else if (https) dial = () => tlsDial(e.address, port, url.hostname);
    else dial = plainDialer(e.address, port, s.timeoutMs);
    return httpGet(s.key, { ...options, dial });
  }
}

/** TLS to an endpoint, the server certificate checked against the URI's host (system roots). */
function tlsDial(address: string, port: number, servername: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: address, port, servername, rejectUnauthorized: true });
    socket.once("secureConnect", () => {
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (e) => {
      socket.destroy();
      reject(e);
    });
  });
}
