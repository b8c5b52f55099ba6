/**
 * Test support for JWKS fetching: a real JWKS server on loopback (Deno.serve) whose answer a test
 * changes, logging each request's user agent, and key sets made with jose.
 *
 * @module
 */
import { exportJWK, generateKeyPair } from "jose";

/** A JSON Web Key Set text with one fresh ES256 public key named `kid`. */
export async function keySetText(kid: string): Promise<string> {
  const { publicKey } = await generateKeyPair("ES256", { extractable: true });
  return JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: "ES256" }] });
}

/** A running JWKS server. */
export interface JwksTestServer {
  /** What it answers (`body` with `status`), and what it saw: the `user-agent` of every request. */
  state: { body: string; status: number; userAgents: string[] };
  /** `http(s)://127.0.0.1:<port>`. */
  base: string;
  /** `<base>/keys`. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts a JWKS server on 127.0.0.1: `/.well-known/openid-configuration` names `<base>/keys`,
 * every other path answers `state.body` with `state.status`.
 */
export function startJwksServer(tls?: { cert: string; key: string }): JwksTestServer {
  const state = { body: "", status: 200, userAgents: [] as string[] };
  let base = "";
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    ...tls,
  }, (req): Response => {
    state.userAgents.push(req.headers.get("user-agent") ?? "");
    const url = new URL(req.url);
    if (url.pathname === "/.well-known/openid-configuration") {
      return Response.json({ issuer: base, jwks_uri: `${base}/keys` });
    }
    return new Response(state.body, { status: state.status });
  });
  base = `${tls ? "https" : "http"}://127.0.0.1:${server.addr.port}`;
  return { state, base, url: `${base}/keys`, port: server.addr.port, stop: () => server.shutdown() };
}

/** Waits until `cond()` holds, polling every 20 ms. */
export async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
