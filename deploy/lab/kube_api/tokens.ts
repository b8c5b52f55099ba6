/**
 * Service-account tokens: the TokenRequest subresource (`POST .../serviceaccounts/<name>/token`)
 * issues ES256 JWTs with the claims kube-apiserver puts in bound tokens (iss, sub
 * `system:serviceaccount:<ns>:<name>`, aud, exp, iat, nbf, `kubernetes.io` namespace, serviceaccount
 * and optional pod), and TokenReview (authentication.k8s.io/v1) checks them: signature, expiry,
 * audience, and that the service account (and bound pod) still exist with the same uid.
 * Source: Kubernetes docs "Managing Service Accounts" (bound service account tokens) and the
 * TokenReview/TokenRequest API reference (v1.32).
 *
 * @module
 */
import * as jose from "jose";
import type { ObjectApi, UserInfo } from "./objects.ts";
import { ApiError, isObject, type KubeObject, meta, str } from "./types.ts";

/** The issuer and default API audience, as a cluster with the default `--service-account-issuer` has. */
export const ISSUER = "https://kubernetes.default.svc.cluster.local";

const DEFAULT_TTL_S = 3600;

/** Issues and reviews service-account tokens with one signing key made at start. */
export class TokenService {
  private constructor(private readonly keys: CryptoKeyPair, private readonly objects: ObjectApi) {}

  /** A service with a fresh ES256 key. */
  static async create(objects: ObjectApi): Promise<TokenService> {
    const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
      "sign",
      "verify",
    ]);
    return new TokenService(keys as CryptoKeyPair, objects);
  }

  #type(resource: string): Parameters<ObjectApi["get"]>[0] {
    return this.objects.registry.find("", "v1", resource)!;
  }

  /**
   * Answers a TokenRequest for service account `namespace/name`: `spec.audiences` (default: the API
   * audience), `spec.expirationSeconds` (default 3600, at least 600) and `spec.boundObjectRef` (a Pod).
   *
   * @throws ApiError NotFound for a missing service account or bound pod
   */
  async request(namespace: string, name: string, body: KubeObject): Promise<KubeObject> {
    const sa = this.objects.get(this.#type("serviceaccounts"), namespace, name);
    const spec = isObject(body.spec) ? body.spec : {};
    const audiences = Array.isArray(spec.audiences) && spec.audiences.length > 0
      ? spec.audiences.filter((a) => typeof a === "string")
      : [ISSUER];
    const ttl = typeof spec.expirationSeconds === "number"
      ? Math.max(600, spec.expirationSeconds)
      : DEFAULT_TTL_S;
    const claims: KubeObject = { namespace, serviceaccount: { name, uid: str(meta(sa), "uid") } };
    const bound = isObject(spec.boundObjectRef) ? spec.boundObjectRef : undefined;
    if (bound) {
      if (str(bound, "kind") !== "Pod") {
        throw new ApiError(
          "BadRequest",
          `cannot bind token to object of kind ${str(bound, "kind")}: only Pod is supported`,
        );
      }
      const pod = this.objects.get(this.#type("pods"), namespace, str(bound, "name"));
      claims.pod = { name: str(bound, "name"), uid: str(meta(pod), "uid") };
    }
    const now = Math.floor(Date.now() / 1000);
    const token = await new jose.SignJWT({ "kubernetes.io": claims })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer(ISSUER)
      .setSubject(`system:serviceaccount:${namespace}:${name}`)
      .setAudience(audiences)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + ttl)
      .sign(this.keys.privateKey);
    return {
      kind: "TokenRequest",
      apiVersion: "authentication.k8s.io/v1",
      metadata: { name, namespace, creationTimestamp: null },
      spec: { ...spec, audiences, expirationSeconds: ttl },
      status: {
        token,
        expirationTimestamp: new Date((now + ttl) * 1000).toISOString().replace(/\.\d+Z$/, "Z"),
      },
    };
  }

  /** The user of a valid token for one of `audiences` (default: the API audience), or an error text. */
  async authenticate(token: string, audiences: string[] = [ISSUER]): Promise<
    { user: UserInfo; audiences: string[] } | { error: string }
  > {
    let payload: jose.JWTPayload;
    try {
      ({ payload } = await jose.jwtVerify(token, this.keys.publicKey, {
        issuer: ISSUER,
        algorithms: ["ES256"],
      }));
    } catch (e) {
      return { error: `invalid bearer token: ${(e as Error).message}` };
    }
    const aud = typeof payload.aud === "string" ? [payload.aud] : payload.aud ?? [];
    const matched = audiences.filter((a) => aud.includes(a));
    if (matched.length === 0) return { error: "token audiences do not match the requested audiences" };
    const k = isObject(payload["kubernetes.io"]) ? payload["kubernetes.io"] : {};
    const ns = str(k, "namespace");
    const sa = isObject(k.serviceaccount) ? k.serviceaccount : {};
    const stored = this.objects.store.get(this.#type("serviceaccounts"), ns, str(sa, "name"));
    if (!stored || str(meta(stored), "uid") !== str(sa, "uid")) {
      return { error: `service account ${ns}/${str(sa, "name")} has been deleted or recreated` };
    }
    const extra: Record<string, string[]> = {};
    if (isObject(k.pod)) {
      const pod = this.objects.store.get(this.#type("pods"), ns, str(k.pod, "name"));
      if (!pod || str(meta(pod), "uid") !== str(k.pod, "uid")) {
        return { error: `pod ${ns}/${str(k.pod, "name")} bound to the token has been deleted or recreated` };
      }
      extra["authentication.kubernetes.io/pod-name"] = [str(k.pod, "name")];
      extra["authentication.kubernetes.io/pod-uid"] = [str(k.pod, "uid")];
    }
    return {
      user: {
        username: `system:serviceaccount:${ns}:${str(sa, "name")}`,
        uid: str(sa, "uid"),
        groups: ["system:serviceaccounts", `system:serviceaccounts:${ns}`, "system:authenticated"],
        ...(Object.keys(extra).length ? { extra } : {}),
      },
      audiences: matched,
    };
  }

  /** Answers a TokenReview (status.authenticated, user, audiences or error). */
  async review(body: KubeObject): Promise<KubeObject> {
    const spec = isObject(body.spec) ? body.spec : {};
    const audiences = Array.isArray(spec.audiences) && spec.audiences.length > 0
      ? spec.audiences.filter((a) => typeof a === "string")
      : undefined;
    const result = await this.authenticate(str(spec, "token"), audiences);
    const status = "error" in result
      ? { authenticated: false, user: {}, error: result.error }
      : { authenticated: true, user: result.user, audiences: result.audiences };
    return {
      kind: "TokenReview",
      apiVersion: "authentication.k8s.io/v1",
      metadata: { creationTimestamp: null },
      spec,
      status,
    };
  }
}
