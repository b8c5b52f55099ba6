/**
 * The HAProxy pair of the protocol benchmark: what the mesh's proxy pair does, done by Debian's haproxy.
 * Client side: plain TCP or h2c in, TLS with a client certificate out (`verify required` against the
 * mesh root; ALPN h2 for HTTP/2). Server side: TLS in with a required, verified client certificate,
 * plain TCP or h2c to the app. One haproxy process per side carries every protocol, each on its own port.
 *
 * @module
 */

/** One protocol through the pair: `tcp` (mode tcp) or `h2` (mode http, HTTP/2 on both legs). */
export interface HaproxyRoute {
  name: string;
  mode: "tcp" | "h2";
  /** The client side's plain listener port. */
  clientPort: number;
  /** The server side's TLS listener port. */
  serverPort: number;
  /** The app's port (127.0.0.1). */
  appPort: number;
}

/** Certificates: each side's chain + key PEM (haproxy `crt`) and the mesh root (`ca-file`). */
export interface HaproxyCerts {
  clientPem: string;
  serverPem: string;
  rootPem: string;
}

function global(nbthread: number): string {
  return `global
  nbthread ${nbthread}
  maxconn 4000
defaults
  timeout connect 5s
  timeout client 60s
  timeout server 60s
`;
}

/** haproxy.cfg of the client side: plain in, mutual TLS out. */
export function haproxyClientConfig(routes: HaproxyRoute[], certs: HaproxyCerts, nbthread: number): string {
  return global(nbthread) + routes.map((r) => {
    const h2 = r.mode === "h2";
    return `frontend ${r.name}_in
  mode ${h2 ? "http" : "tcp"}
  bind 127.0.0.1:${r.clientPort}${h2 ? " proto h2" : ""}
  default_backend ${r.name}_out
backend ${r.name}_out
  mode ${h2 ? "http" : "tcp"}${h2 ? "\n  http-reuse always" : ""}
  server up 127.0.0.1:${r.serverPort} ssl crt ${certs.clientPem} ca-file ${certs.rootPem} verify required${
      h2 ? " alpn h2" : ""
    }
`;
  }).join("");
}

/** haproxy.cfg of the server side: mutual TLS in (client certificate required), plain to the app. */
export function haproxyServerConfig(routes: HaproxyRoute[], certs: HaproxyCerts, nbthread: number): string {
  return global(nbthread) + routes.map((r) => {
    const h2 = r.mode === "h2";
    return `frontend ${r.name}_in
  mode ${h2 ? "http" : "tcp"}
  bind 127.0.0.1:${r.serverPort} ssl crt ${certs.serverPem} ca-file ${certs.rootPem} verify required${
      h2 ? " alpn h2" : ""
    }
  default_backend ${r.name}_app
backend ${r.name}_app
  mode ${h2 ? "http" : "tcp"}
  server app 127.0.0.1:${r.appPort}${h2 ? " proto h2" : ""}
`;
  }).join("");
}
