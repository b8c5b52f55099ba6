/**
 * Bootstrap tokens: short-lived JWTs (ES256) with which a workload outside Kubernetes proves its
 * identity to the CA for its first certificate, the stand-in for Kubernetes service-account tokens.
 * `meshctl x workload entry configure` obtains them (see meshd/ca/README.md for the paths
 * by which an operator may get one, and why only those).
 *
 * The token-signing key lives in ROOT_CA_DIR as `token-signing-key.pem` (PKCS #8, P-256, mode
 * 0600), created on first use and reused afterwards: whoever may read the CA directory may mint
 * tokens, the same authority as holding the CA key. Claims, as a Kubernetes token's:
 * `iss` (default `meshd`), `sub` = `system:serviceaccount:<namespace>:<service account>`, `aud` =
 * the first of TOKEN_AUDIENCES, `iat`, `nbf`, `exp`, a random `jti`; the header carries
 * `typ: mesh-bootstrap+jwt` and `kid` = the key's JWK thumbprint.
 *
 * @module
 */
import * as jose from "jose";
import { createPrivateKey, createPublicKey } from "node:crypto";
import { join } from "node:path";
import { formatSpiffeId } from "../../identity/mod.ts";
import { toPem } from "./pem.ts";
import { RootCaError } from "./root_ca_error.ts";

/** The token key's file in ROOT_CA_DIR. */
export const TOKEN_KEY_FILE = "token-signing-key.pem";
/** The JWT `typ` header of bootstrap tokens; other JWTs are not accepted as bootstrap tokens. */
export const BOOTSTRAP_TOKEN_TYPE = "mesh-bootstrap+jwt";
/** `iss` when none is configured. */
export const DEFAULT_TOKEN_ISSUER = "meshd";
/** Lifetime when none is asked for: `--tokenDuration`'s default. */
export const DEFAULT_TOKEN_DURATION_SECONDS = 3600;
/** The longest lifetime accepted unless configured otherwise. */
export const MAX_TOKEN_DURATION_SECONDS = 24 * 3600;

/** The token-signing key pair. */
export interface TokenKey {
  /** ES256 signing key, not extractable. */
  privateKey: CryptoKey;
  /** ES256 verification key. */
  publicKey: CryptoKey;
  /** The public JWK (with `kid`, `alg`, `use`), e.g. for a JWKS document. */
  publicJwk: jose.JWK;
  /** RFC 7638 thumbprint of the public key; the tokens' `kid`. */
  keyId: string;
  /** Whether the key was created by this call. */
  created: boolean;
}

/** A minted token. */
export interface BootstrapToken {
  /** The compact JWT. */
  token: string;
  /** When it stops being accepted. */
  expiresAt: Date;
  /** The namespace of the identity it stands for. */
  namespace: string;
  /** The service account of the identity it stands for. */
  serviceAccount: string;
  /** Its audience. */
  audience: string;
}

/** What to mint. */
export interface BootstrapTokenRequest {
  namespace: string;
  serviceAccount: string;
  /** Lifetime in seconds; default {@link DEFAULT_TOKEN_DURATION_SECONDS}. */
  durationSeconds?: number;
  /** The current time; for tests. */
  now?: Date;
}

/** `system:serviceaccount:<namespace>:<service account>`. */
export function serviceAccountSubject(namespace: string, serviceAccount: string): string {
  return `system:serviceaccount:${namespace}:${serviceAccount}`;
}

/** The namespace and service account in a `system:serviceaccount:<ns>:<sa>` subject, or undefined. */
export function parseServiceAccountSubject(
  sub: unknown,
): { namespace: string; serviceAccount: string } | undefined {
  if (typeof sub !== "string") return undefined;
  const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(sub);
  if (!m) return undefined;
  try {
    formatSpiffeId({ namespace: m[1], serviceAccount: m[2] });
  } catch {
    return undefined;
  }
  return { namespace: m[1], serviceAccount: m[2] };
}

async function fromPem(pem: string, path: string, created: boolean): Promise<TokenKey> {
  let priv;
  try {
    priv = createPrivateKey({ key: pem, format: "pem" });
  } catch (e) {
    throw new RootCaError(path, `is not a readable PEM private key (${(e as Error).message})`);
  }
  if (priv.asymmetricKeyType !== "ec" || priv.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new RootCaError(path, "must hold an ECDSA P-256 key (ES256)");
  }
  const pkcs8 = priv.export({ type: "pkcs8", format: "der" });
  const privateKey = await crypto.subtle.importKey(
    "pkcs8",
    new Uint8Array(pkcs8.buffer, pkcs8.byteOffset, pkcs8.byteLength) as Uint8Array<ArrayBuffer>,
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["sign"],
  );
  const jwk = createPublicKey(priv).export({ format: "jwk" }) as jose.JWK;
  const keyId = await jose.calculateJwkThumbprint(jwk);
  const publicJwk: jose.JWK = { ...jwk, kid: keyId, alg: "ES256", use: "sig" };
  const publicKey = await crypto.subtle.importKey(
    "jwk",
    { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y },
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["verify"],
  );
  return { privateKey, publicKey, publicJwk, keyId, created };
}

/**
 * Reads `token-signing-key.pem` from `rootCaDir`, creating it (mode 0600) when it is absent, unless
 * `create` is false (`meshd token` passes false: a command run by hand, perhaps as another user,
 * must not create the key that meshd will then be unable to read).
 *
 * @throws {RootCaError} naming the file when it is unreadable, not a P-256 key, or absent and not to be created
 */
export async function loadOrCreateTokenKey(rootCaDir: string, create = true): Promise<TokenKey> {
  const path = join(rootCaDir, TOKEN_KEY_FILE);
  try {
    return await fromPem(await Deno.readTextFile(path), path, false);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      if (e instanceof RootCaError) throw e;
      throw new RootCaError(path, `cannot be read (${(e as Error).message})`);
    }
    if (!create) {
      throw new RootCaError(path, "is missing; meshd creates it when it starts with this ROOT_CA_DIR");
    }
  }
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]);
  const pem = toPem(await crypto.subtle.exportKey("pkcs8", pair.privateKey), "PRIVATE KEY");
  await Deno.mkdir(rootCaDir, { recursive: true, mode: 0o700 });
  try {
    await Deno.writeTextFile(path, pem, { createNew: true, mode: 0o600 });
    await Deno.chmod(path, 0o600);
  } catch (e) {
    // Another process created it first: use theirs, so that both accept the same tokens.
    if (e instanceof Deno.errors.AlreadyExists) {
      return await fromPem(await Deno.readTextFile(path), path, false);
    }
    throw new RootCaError(path, `cannot be written (${(e as Error).message})`);
  }
  return await fromPem(pem, path, true);
}

/** Options of {@link BootstrapTokenIssuer}. */
export interface BootstrapTokenIssuerOptions {
  /** Accepted audiences (TOKEN_AUDIENCES); tokens are minted for the first. */
  audiences: string[];
  /** `iss`; default {@link DEFAULT_TOKEN_ISSUER}. */
  issuer?: string;
  /** Longest lifetime accepted; default {@link MAX_TOKEN_DURATION_SECONDS}. */
  maxDurationSeconds?: number;
  /** For {@link BootstrapTokenIssuer.open}: create the key when absent; default true. */
  create?: boolean;
}

/** Mints bootstrap tokens with one key. */
export class BootstrapTokenIssuer {
  readonly #key: TokenKey;
  readonly #audience: string;
  readonly #issuer: string;
  readonly #maxDuration: number;

  /**
   * @param key the token-signing key
   * @param options audiences, issuer and maximum lifetime
   */
  constructor(key: TokenKey, options: BootstrapTokenIssuerOptions) {
    if (options.audiences.length === 0) throw new Error("at least one token audience is needed");
    this.#key = key;
    this.#audience = options.audiences[0];
    this.#issuer = options.issuer ?? DEFAULT_TOKEN_ISSUER;
    this.#maxDuration = options.maxDurationSeconds ?? MAX_TOKEN_DURATION_SECONDS;
  }

  /** Opens (or creates) the key in `rootCaDir`. */
  static async open(rootCaDir: string, options: BootstrapTokenIssuerOptions): Promise<BootstrapTokenIssuer> {
    return new BootstrapTokenIssuer(await loadOrCreateTokenKey(rootCaDir, options.create ?? true), options);
  }

  /** The key that verifies this issuer's tokens. */
  get verificationKey(): CryptoKey {
    return this.#key.publicKey;
  }

  /** The public JWK of the token key. */
  get publicJwk(): jose.JWK {
    return { ...this.#key.publicJwk };
  }

  /** The `iss` of minted tokens. */
  get issuer(): string {
    return this.#issuer;
  }

  /**
   * Mints a token for `namespace`/`serviceAccount`.
   *
   * @throws {RangeError} for a lifetime that is not a whole number of seconds from 1 to the maximum
   * @throws {Error} for a namespace or service account that cannot be part of a SPIFFE ID
   */
  async issue(req: BootstrapTokenRequest): Promise<BootstrapToken> {
    const duration = req.durationSeconds ?? DEFAULT_TOKEN_DURATION_SECONDS;
    if (!Number.isInteger(duration) || duration < 1 || duration > this.#maxDuration) {
      throw new RangeError(`token duration must be 1 to ${this.#maxDuration} seconds; got ${duration}`);
    }
    formatSpiffeId({ namespace: req.namespace, serviceAccount: req.serviceAccount }); // throws on bad names
    const iat = Math.floor((req.now ?? new Date()).getTime() / 1000);
    const exp = iat + duration;
    const token = await new jose.SignJWT({})
      .setProtectedHeader({ alg: "ES256", typ: BOOTSTRAP_TOKEN_TYPE, kid: this.#key.keyId })
      .setIssuer(this.#issuer)
      .setSubject(serviceAccountSubject(req.namespace, req.serviceAccount))
      .setAudience(this.#audience)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(exp)
      .setJti(crypto.randomUUID())
      .sign(this.#key.privateKey);
    return {
      token,
      expiresAt: new Date(exp * 1000),
      namespace: req.namespace,
      serviceAccount: req.serviceAccount,
      audience: this.#audience,
    };
  }
}
