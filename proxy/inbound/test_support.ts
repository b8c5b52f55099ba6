/**
 * Helpers for the inbound tests: a test CA and workload certificates made with @peculiar/x509,
 * snapshots, real curl, raw plain and TLS HTTP/1.1 connections, a log that records, and Debian's
 * httpbin under gunicorn when it is installed. Not used by the proxy itself.
 *
 * @module
 */
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import * as x509 from "@peculiar/x509";
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { join } from "node:path";
import type { Log } from "../http/session.ts";
import type { CertificateInfo, PortMtls, RuntimeSnapshot } from "../runtime/snapshot.ts";

const EC = { name: "ECDSA", namedCurve: "P-256" };
const EC_SIGN = { name: "ECDSA", hash: "SHA-256" };

function pem(der: ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der).toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** A CA: certificate and key. */
export interface TestCa {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  pem: string;
}

/** A self-signed CA. */
export async function makeCa(name: string): Promise<TestCa> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: EC_SIGN,
    notBefore: new Date(Date.now() - 3600_000),
    notAfter: new Date(Date.now() + 86400_000),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, pem: cert.toString("pem") + "\n" };
}

/** A leaf certificate: PEM, key PEM and DER. */
export interface TestLeaf {
  certPem: string;
  keyPem: string;
  der: Uint8Array;
}

/** A workload certificate issued by `ca` (Istio's have an empty subject and only a URI SAN). */
export async function makeLeaf(
  ca: TestCa,
  opts: { uris?: string[]; dnsNames?: string[]; ips?: string[]; subject?: string | x509.JsonName } = {},
): Promise<TestLeaf> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const names: x509.JsonGeneralNames = [
    ...(opts.uris ?? []).map((value) => ({ type: "url" as const, value })),
    ...(opts.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: crypto.getRandomValues(new Uint8Array(8)).reduce(
      (s, b) => s + b.toString(16).padStart(2, "0"),
      "01",
    ),
    subject: opts.subject ?? "",
    issuer: ca.cert.subjectName,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: EC_SIGN,
    notBefore: new Date(Date.now() - 120_000),
    notAfter: new Date(Date.now() + 86400_000),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      new x509.SubjectAlternativeNameExtension(names, false),
    ],
  });
  return {
    certPem: cert.toString("pem") + "\n",
    keyPem: pem(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
    der: new Uint8Array(cert.rawData),
  };
}

/** The proxy's certificate as the snapshot carries it. */
export function certificateInfo(leaf: TestLeaf, ca: TestCa, spiffeId: string): CertificateInfo {
  return {
    certChainPem: leaf.certPem,
    privateKeyPem: leaf.keyPem,
    rootsPem: ca.pem,
    spiffeId,
    notBefore: Date.now() - 120_000,
    notAfter: Date.now() + 86400_000,
  };
}

/** A snapshot with a workload in trust domain cluster.local, the given default mode and port modes. */
export function snapshotOf(
  mode: PortMtls["mode"],
  certificate: CertificateInfo | undefined,
  ports: { port: number; mode: PortMtls["mode"] }[] = [],
  revision = 1,
): RuntimeSnapshot {
  return {
    revision,
    versions: {},
    services: {},
    authorizations: {},
    jwtPolicies: {},
    routes: {},
    credentials: {},
    certificate,
    workload: {
      name: "httpbin",
      namespace: "foo",
      serviceAccount: "httpbin",
      trustDomain: "cluster.local",
      addresses: ["127.0.0.1"],
      labels: { app: "httpbin" },
      proxied: true,
      ports: { http: 8000 },
      inboundMtls: ports.map((p) => ({ port: p.port, mode: p.mode, policy: "foo/p", scope: "port" })),
      defaultMtls: { port: 0, mode, policy: "foo/default", scope: "namespace" },
      settings: DEFAULT_PROXY_SETTINGS,
    },
  };
}

/** One log line. */
export interface LogEntry {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

/** A {@link Log} that keeps every entry (and prints with MESH_TEST_LOG=1). */
export class RecordingLog implements Log {
  readonly entries: LogEntry[] = [];
  #add(level: string, msg: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level, msg, fields });
    if (Deno.env.get("MESH_TEST_LOG") === "1") console.error(level, msg, JSON.stringify(fields ?? {}));
  }
  debug(msg: string, fields?: Record<string, unknown>): void {
    this.#add("debug", msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.#add("info", msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.#add("warn", msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.#add("error", msg, fields);
  }
}

/** Files curl reads: the roots, and client certificates by name. */
export class CertFiles {
  constructor(readonly dir: string) {}
  static async create(): Promise<CertFiles> {
    return new CertFiles(await Deno.makeTempDir({ prefix: "proxy-inbound-test-" }));
  }
  async write(name: string, text: string): Promise<string> {
    const path = join(this.dir, name);
    await Deno.writeTextFile(path, text);
    return path;
  }
  async client(name: string, leaf: TestLeaf): Promise<string[]> {
    return [
      "--cert",
      await this.write(`${name}.pem`, leaf.certPem),
      "--key",
      await this.write(`${name}.key`, leaf.keyPem),
    ];
  }
  remove(): Promise<void> {
    return Deno.remove(this.dir, { recursive: true });
  }
}

/** A mesh CA, httpbin's serving certificate and sleep's client certificate as curl arguments. */
export interface MtlsFixture {
  ca: TestCa;
  clientLeaf: TestLeaf;
  /** httpbin's certificate as the listener's snapshot holds it. */
  cert: CertificateInfo;
  /** curl's `--cacert`, `--cert` and `--key`. */
  mtls: string[];
  files: CertFiles;
}

/** Makes the certificates of httpbin (server, on 127.0.0.1) and sleep (client) in foo. */
export async function mtlsFixture(serverId: string, clientId: string): Promise<MtlsFixture> {
  const ca = await makeCa("Mesh Root CA");
  const serverLeaf = await makeLeaf(ca, { uris: [serverId], ips: ["127.0.0.1"] });
  const clientLeaf = await makeLeaf(ca, { uris: [clientId] });
  const files = await CertFiles.create();
  const mtls = [
    "--cacert",
    await files.write("roots.pem", ca.pem),
    ...await files.client("sleep", clientLeaf),
  ];
  return { ca, clientLeaf, cert: certificateInfo(serverLeaf, ca, serverId), mtls, files };
}

/** The result of a curl run. */
export interface CurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real curl (`-sS`, 10 s limit) with the given arguments. */
export async function curl(args: string[], stdin?: Uint8Array): Promise<CurlResult> {
  const cmd = new Deno.Command("curl", {
    args: ["-sS", "--max-time", "10", ...args],
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (stdin) {
    const w = child.stdin.getWriter();
    await w.write(stdin);
    await w.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** A parsed HTTP/1.1 response read by {@link RawConn}. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A plain or TLS connection speaking HTTP/1.1 by hand (node sockets), for keep-alive, malformed
 * input and certificate rotation tests. Understands Content-Length and chunked responses.
 */
export class RawConn {
  #buf = Buffer.alloc(0);
  #ended = false;
  #waiters: (() => void)[] = [];
  constructor(readonly socket: net.Socket) {
    socket.on("data", (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      this.#wake();
    });
    socket.on("end", () => {
      this.#ended = true;
      this.#wake();
    });
    socket.on("close", () => {
      this.#ended = true;
      this.#wake();
    });
    socket.on("error", () => {
      this.#ended = true;
      this.#wake();
    });
  }

  /** @param connect node's connect options besides the port: `host` (default 127.0.0.1), `localAddress`, ... */
  static plain(port: number, connect: Omit<net.TcpNetConnectOpts, "port"> = {}): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", ...connect, port }, () => resolve(new RawConn(s)));
      s.once("error", reject);
    });
  }

  static tls(port: number, opts: { ca: string; cert?: string; key?: string }): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const s = tls.connect(
        { host: "127.0.0.1", port, ca: opts.ca, cert: opts.cert, key: opts.key },
        () => resolve(new RawConn(s)),
      );
      s.once("error", reject);
    });
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  get ended(): boolean {
    return this.#ended;
  }

  write(data: string | Uint8Array): void {
    this.socket.write(typeof data === "string" ? Buffer.from(data, "latin1") : data);
  }

  async #more(deadline: number): Promise<boolean> {
    if (this.#ended) return false;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error("timed out waiting for the response");
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve) => {
      this.#waiters.push(resolve);
      timer = setTimeout(resolve, left);
    });
    clearTimeout(timer);
    return true;
  }

  /** Reads one response; `head` for a response to HEAD. */
  async response(opts: { head?: boolean; timeoutMs?: number } = {}): Promise<RawResponse> {
    const deadline = Date.now() + (opts.timeoutMs ?? 5000);
    let end: number;
    while ((end = this.#buf.indexOf("\r\n\r\n")) < 0) {
      if (!await this.#more(deadline)) throw new Error(`connection ended before a response: ${this.#buf}`);
    }
    const lines = this.#buf.subarray(0, end).toString("latin1").split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(":");
      const name = line.slice(0, i).toLowerCase();
      headers[name] = headers[name] === undefined
        ? line.slice(i + 1).trim()
        : `${headers[name]}, ${line.slice(i + 1).trim()}`;
    }
    let rest = this.#buf.subarray(end + 4);
    let body = "";
    if (opts.head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
      // no body
    } else if (headers["transfer-encoding"]?.toLowerCase().includes("chunked")) {
      for (;;) {
        const text = rest.toString("latin1");
        const m = /^([0-9a-fA-F]+)[^\r]*\r\n/.exec(text);
        if (m) {
          const size = parseInt(m[1], 16);
          if (size === 0) {
            const fin = text.indexOf("\r\n\r\n", m[0].length - 2);
            if (fin >= 0) {
              rest = rest.subarray(fin + 4);
              break;
            }
          } else if (text.length >= m[0].length + size + 2) {
            body += text.slice(m[0].length, m[0].length + size);
            rest = rest.subarray(m[0].length + size + 2);
            continue;
          }
        }
        this.#buf = rest;
        if (!await this.#more(deadline)) throw new Error("connection ended inside a chunked body");
        rest = this.#buf;
      }
    } else if (headers["content-length"] !== undefined) {
      const n = Number(headers["content-length"]);
      while (rest.length < n) {
        this.#buf = rest;
        if (!await this.#more(deadline)) throw new Error("connection ended inside a body");
        rest = this.#buf;
      }
      body = rest.subarray(0, n).toString("latin1");
      rest = rest.subarray(n);
    } else {
      this.#buf = rest;
      while (await this.#more(deadline)) { /* until close */ }
      body = this.#buf.toString("latin1");
      rest = Buffer.alloc(0);
    }
    this.#buf = rest;
    return { status, headers, body };
  }

  /** Reads exactly `n` raw bytes (after any response read so far). */
  async bytes(n: number, timeoutMs = 5000): Promise<Uint8Array> {
    const deadline = Date.now() + timeoutMs;
    while (this.#buf.length < n) {
      if (!await this.#more(deadline)) throw new Error("connection ended");
    }
    const out = new Uint8Array(this.#buf.subarray(0, n));
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  /** Waits until the peer closes; true if it did within the time. */
  async closed(timeoutMs = 3000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    try {
      while (await this.#more(deadline)) { /* wait */ }
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A free TCP port on 127.0.0.1 (bound and released). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Whether Debian's httpbin and gunicorn are installed. */
export function hasHttpbin(): boolean {
  try {
    Deno.statSync("/usr/bin/gunicorn");
    return new Deno.Command("/usr/bin/python3", {
      args: ["-c", "import httpbin"],
      stdout: "null",
      stderr: "null",
    })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** httpbin under gunicorn with keep-alive (gthread workers), on 127.0.0.1. */
export class Httpbin {
  private constructor(readonly port: number, readonly child: Deno.ChildProcess) {}

  static async start(): Promise<Httpbin> {
    const port = freePort();
    const child = new Deno.Command("/usr/bin/gunicorn", {
      args: [
        "-b",
        `127.0.0.1:${port}`,
        "-k",
        "gthread",
        "--threads",
        "8",
        "--keep-alive",
        "30",
        "httpbin:app",
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/get`);
        await r.body?.cancel();
        if (r.ok) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        await child.status;
        throw new Error("httpbin did not start");
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return new Httpbin(port, child);
  }

  async stop(): Promise<void> {
    this.child.kill("SIGTERM");
    await this.child.status;
  }
}

/** A small Deno HTTP application for the streaming, chunked and upgrade cases. */
export class TestApp {
  /** Remote ports of the connections requests came on (the proxy's upstream connections). */
  readonly remotePorts: number[] = [];
  /** Request headers of the last request. */
  lastHeaders: Headers = new Headers();
  /** /gate waits for this before its second part. */
  gate: PromiseWithResolvers<void> = Promise.withResolvers();
  /** /upload resolves this when the first body chunk arrived. */
  firstChunk: PromiseWithResolvers<void> = Promise.withResolvers();
  /** /upload requests whose body ended early (the proxy reset the connection): the app stopped waiting. */
  uploadsCut = 0;
  readonly server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (req, info) => this.#handle(req, info),
    );
  }

  get port(): number {
    return this.server.addr.port;
  }

  async #handle(req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> {
    this.remotePorts.push(info.remoteAddr.port);
    this.lastHeaders = req.headers;
    const url = new URL(req.url);
    const enc = new TextEncoder();
    switch (url.pathname) {
      case "/headers":
        return Response.json({ headers: Object.fromEntries(req.headers) });
      case "/echo":
        return new Response(req.body, {
          headers: {
            "x-request-transfer-encoding": req.headers.get("transfer-encoding") ?? "",
            "x-request-content-length": req.headers.get("content-length") ?? "",
          },
        });
      case "/gate": {
        const gate = this.gate.promise;
        return new Response(
          new ReadableStream({
            async start(c) {
              c.enqueue(enc.encode("first\n"));
              await gate;
              c.enqueue(enc.encode("second\n"));
              c.close();
            },
          }),
        );
      }
      case "/stream":
        return new Response(
          new ReadableStream({
            start(c) {
              for (let i = 0; i < 5; i++) c.enqueue(enc.encode(`part ${i}\n`));
              c.close();
            },
          }),
        );
      case "/upload": {
        let n = 0;
        let first = true;
        try {
          for await (const chunk of req.body!) {
            n += chunk.length;
            if (first) {
              first = false;
              this.firstChunk.resolve();
            }
          }
        } catch {
          this.uploadsCut++;
          return new Response("body cut", { status: 500 });
        }
        return new Response(String(n));
      }
      case "/big": {
        const n = Number(url.searchParams.get("n") ?? "1048576");
        return new Response(new Uint8Array(n).fill(0x61));
      }
      case "/ws": {
        const { socket, response } = Deno.upgradeWebSocket(req);
        socket.onmessage = (e) => socket.send(typeof e.data === "string" ? `echo: ${e.data}` : e.data);
        return response;
      }
      default:
        return new Response("not found", { status: 404 });
    }
  }

  stop(): Promise<void> {
    return this.server.shutdown();
  }
}
