/**
 * The inbound request filter chain, in Envoy's order: path normalization (the mesh's
 * `pathNormalization`, from the snapshot's workload settings), JWT authentication
 * (RequestAuthentication), authorization (AuthorizationPolicy), then the application. Every decision
 * is the shared evaluator's (shared/policy); this module only reads the request from the wire and
 * writes the answers:
 *
 * - a target that normalization refuses (`%00`; `#` and wrong-case methods already in the parser): 400;
 * - an invalid token: 401, body the reason (`Jwt is expired`, ...), `www-authenticate: Bearer
 *   realm="http://<host><path>", error="invalid_token"`. Every token in every configured location
 *   is verified (each value of a repeated header on its own), and one invalid token is enough
 *   (shared/policy/jwt, after Envoy's jwt_authn);
 * - a denial: 403, body `RBAC: access denied`, logged (warning, logger `inbound`) with the deciding
 *   policy and rule; with the request header `x-mesh-authz-debug: 1` (or `true`) from a source that
 *   the mesh config's `denialExplanation` lists (nobody by default) the reply also carries
 *   `x-mesh-authz-reason: <reason>`, the same text as the log's `reason` field, e.g.
 *   `denied by DENY policy foo/deny-admin rule 0` or `denied: no rule of ALLOW policies foo/a matched`;
 * - X-Forwarded-For (./forwarded_for.ts): a gateway appends the peer and takes the trusted client
 *   address `numTrustedProxies` entries from the right; a sidecar forwards it untouched and takes the
 *   last entry. That address is `remoteIpBlocks` and `remote.ip`;
 * - otherwise the request is forwarded with the normalized path (query kept; the path policies saw),
 *   an absolute-form target's authority as Host (RFC 9112 3.2.2), each verified token removed from
 *   its header (every value) or query parameter unless forwardOriginalToken, and the payload and claim
 *   headers set (any such header the client sent is removed first).
 *
 * @module
 */
import type { AuthorizationDecision, JwtOutcome, PathNormalization } from "../../shared/mod.ts";
// Files, not the shared/mod.ts barrel: the barrel loads the schemas, protobufjs and YAML into every
// data-path isolate (proxy/workers/README.md, "Module graph").
import { type NormalizedPath, normalizePath, PathError } from "../../shared/policy/authorization/path.ts";
import { withoutParams } from "../../shared/policy/jwt/token_location.ts";
import { wwwAuthenticate } from "../../shared/policy/jwt/authenticate.ts";
import { ascii } from "../http/chars.ts";
import type { HttpHead } from "../http/http_head.ts";
import type { FilterReply, FilterVerdict, Log, RequestFilter } from "../http/session_types.ts";
import { type RuntimeSnapshot, settingsInForce } from "../runtime/snapshot.ts";
import { explanationAudienceOf } from "./explanation.ts";
import { gatewayForwardedFor, sidecarRemoteIp } from "./forwarded_for.ts";
import { AUTHZ_DEBUG_HEADER, type InboundPolicies, inboundPoliciesOf } from "./policies.ts";

/** What the filter knows of the connection. */
export interface ConnectionAttributes {
  /** The peer's SPIFFE ID over mutual TLS, else undefined. */
  principal: string | undefined;
  /** The peer address (no port). */
  peerIp: string;
  /** The address the connection was accepted on. */
  localIp: string;
  /** The container port (`ports`, `destination.port`). */
  port: number;
  /** The TLS server name, when the client sent one. */
  sni: string | undefined;
  /** `ip:port` of the peer, for logs. */
  peer: string;
  /**
   * A gateway (Envoy's use_remote_address, as Istio sets on gateways): X-Forwarded-For gets the peer
   * appended and numTrustedProxies applies. Default false (a sidecar).
   */
  gateway?: boolean;
  /** Whether the downstream connection is TLS (a gateway's X-Forwarded-Proto). */
  tls?: boolean;
}

const DENIED: FilterReply = { status: 403, headers: "", body: "RBAC: access denied" };

/** Reads the named headers of a head: lower-case name to each received value, in order. */
function readHeaders(
  h: HttpHead,
  names: ReadonlySet<string>,
  lengths: ReadonlySet<number>,
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const f = h.fields;
  for (let i = 0; i < h.count; i++) {
    if (!lengths.has(f[i * 4 + 1] - f[i * 4])) continue;
    const name = h.name(i).toLowerCase();
    if (!names.has(name)) continue;
    (out[name] ??= []).push(h.value(i));
  }
  return out;
}

/** Repeated headers joined with `,`, as authorization matches them. */
function joined(values: Record<string, string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in values) out[name] = values[name].join(",");
  return out;
}

/** Marks for removal every field whose lower-case name is in `names`. */
function dropFields(h: HttpHead, names: readonly string[]): void {
  if (names.length === 0) return;
  for (let i = 0; i < h.count; i++) {
    if (names.includes(h.name(i).toLowerCase())) h.drop[i] = 1;
  }
}

function headerLines(pairs: [string, string][]): Uint8Array | null {
  if (pairs.length === 0) return null;
  return ascii(pairs.map(([n, v]) => `${n}: ${v}\r\n`).join(""));
}

const lengthsCache = new WeakMap<ReadonlySet<string>, ReadonlySet<number>>();
function lengthsOf(names: ReadonlySet<string>): ReadonlySet<number> {
  let l = lengthsCache.get(names);
  if (!l) {
    l = new Set([...names].map((n) => n.length));
    lengthsCache.set(names, l);
  }
  return l;
}

/** How the filter treats the request target. */
export interface InboundFilterOptions {
  /**
   * The listener already normalized the target with the mesh's option and forwarded Host from an
   * absolute-form target (the gateway's router): the filter takes the target as it is, so that
   * policies see exactly what was routed and is forwarded, normalized once.
   */
  targetNormalized?: boolean;
}

/** The target and Host to forward instead of the received ones (null: as received). */
interface Rewrite {
  target: Uint8Array | null;
  host: Uint8Array | null;
}

const NO_REWRITE: Rewrite = { target: null, host: null };

/** The filter of one downstream connection; reads the current snapshot for every request. */
export class InboundPolicyFilter implements RequestFilter {
  readonly #snapshot: () => RuntimeSnapshot;
  readonly #conn: ConnectionAttributes;
  readonly #log: Log;
  readonly #targetNormalized: boolean;

  /**
   * @param snapshot the current runtime snapshot (a policy change applies to the next request)
   * @param conn the connection's attributes
   * @param log where denials are logged
   * @param options how the target arrives (normalized by the listener or not)
   */
  constructor(
    snapshot: () => RuntimeSnapshot,
    conn: ConnectionAttributes,
    log: Log,
    options: InboundFilterOptions = {},
  ) {
    this.#snapshot = snapshot;
    this.#conn = conn;
    this.#log = log;
    this.#targetNormalized = options.targetNormalized ?? false;
  }

  check(h: HttpHead): FilterVerdict | null | Promise<FilterVerdict | null> {
    const snapshot = this.#snapshot();
    if (this.#conn.gateway !== true) return this.#check(h, snapshot, undefined);
    const fwd = gatewayForwardedFor(h, this.#conn, settingsInForce(snapshot).numTrustedProxies);
    const v = this.#check(h, snapshot, fwd);
    const line = ascii(fwd.line);
    return v instanceof Promise ? v.then((x) => withField(x, line)) : withField(v, line);
  }

  #check(
    h: HttpHead,
    snapshot: RuntimeSnapshot,
    fwd: { remoteIp: string; forwardedFor: string | null } | undefined,
  ): FilterVerdict | null | Promise<FilterVerdict | null> {
    const policies = inboundPoliciesOf(snapshot);
    // Envoy normalizes every request, policies or not; most targets have nothing to normalize.
    if (!policies.active && !mayNeedNormalization(h)) return null;
    const targetText = h.targetText();
    const option = this.#targetNormalized ? "NONE" : settingsInForce(snapshot).pathNormalization;
    const normalized = normalizedTarget(targetText, option);
    if (normalized === null) return BAD_PATH;
    const rewrite: Rewrite = normalized.changed || normalized.authority !== undefined
      ? {
        target: normalized.changed ? ascii(normalized.path + normalized.query) : null,
        host: normalized.authority === undefined ? null : ascii(normalized.authority),
      }
      : NO_REWRITE;
    if (!policies.active) return rewrite === NO_REWRITE ? null : { reply: null, addFields: null, ...rewrite };
    const values = readHeaders(h, policies.headerNames, lengthsOf(policies.headerNames));
    const headers = joined(values);
    if (normalized.authority !== undefined) headers.host = normalized.authority;
    // Policies see the X-Forwarded-For that is forwarded, as Envoy's RBAC runs after the connection manager.
    if (fwd !== undefined && policies.headerNames.has("x-forwarded-for")) {
      headers["x-forwarded-for"] = fwd.forwardedFor!;
    }
    if (policies.error !== null) {
      return this.#deny(h, headers, normalized.path, { allowed: false, reason: policies.error });
    }
    const authn = policies.authn;
    if (authn !== null) {
      dropFields(h, authn.outputHeaders);
      // Each value of a repeated header is its own token (Envoy's extractor), so values, not joined.
      const found = authn.findTokens({ headers: values, path: targetText });
      if (found.length > 0) {
        return authn.verifyTokens(found).then((o) =>
          this.#afterAuthn(h, policies, headers, normalized, rewrite, o, fwd?.remoteIp)
        );
      }
    }
    return this.#afterAuthn(h, policies, headers, normalized, rewrite, { status: "none" }, fwd?.remoteIp);
  }

  #afterAuthn(
    h: HttpHead,
    policies: InboundPolicies,
    headers: Record<string, string>,
    normalized: NormalizedPath,
    rewrite: Rewrite,
    outcome: JwtOutcome,
    remoteIp: string | undefined,
  ): FilterVerdict | null {
    const path = normalized.path;
    let forward = rewrite;
    if (outcome.status === "invalid") {
      this.#log.info("request refused: invalid JWT", {
        peer: this.#conn.peer,
        method: h.methodText(),
        path,
        reason: outcome.reason,
      });
      const realm = wwwAuthenticate(`http://${headers.host ?? ""}${path}`);
      return {
        reply: { status: 401, headers: `www-authenticate: ${realm}\r\n`, body: outcome.reason },
        addFields: null,
        target: null,
      };
    }
    const valid = outcome.status === "valid" ? outcome : undefined;
    if (valid !== undefined) {
      dropFields(h, valid.removeHeaders);
      if (valid.removeParams.length > 0) {
        const query = withoutParams(normalized.query, valid.removeParams);
        if (query !== normalized.query) forward = { ...forward, target: ascii(path + query) };
      }
    }
    if (policies.authz !== null) {
      const d = policies.authz.evaluate({
        method: h.methodText(),
        path,
        pathNormalized: true,
        host: headers.host,
        port: this.#conn.port,
        headers,
        sourcePrincipal: this.#conn.principal,
        sourceIp: this.#conn.peerIp,
        remoteIp: remoteIp ?? sidecarRemoteIp(h, this.#conn),
        destinationIp: this.#conn.localIp,
        sni: this.#conn.sni,
        requestPrincipal: valid?.principal,
        claims: valid?.claims,
      });
      if (d.audit) {
        this.#log.info("request audited", {
          policy: `${d.audit.policy.namespace}/${d.audit.policy.name}`,
          rule: d.audit.ruleIndex,
          peer: this.#conn.peer,
          method: h.methodText(),
          path,
        });
      }
      if (!d.allowed) return this.#deny(h, headers, path, d);
    }
    const addFields = valid ? headerLines(valid.setHeaders) : null;
    if (addFields === null && forward === NO_REWRITE) return null;
    return { reply: null, addFields, ...forward };
  }

  #deny(h: HttpHead, headers: Record<string, string>, path: string, d: AuthorizationDecision): FilterVerdict {
    this.#log.warn("request denied", {
      policy: d.policy ? `${d.policy.namespace}/${d.policy.name}` : "",
      rule: d.ruleIndex ?? -1,
      reason: d.reason,
      peer: this.#conn.peer,
      principal: this.#conn.principal ?? "",
      method: h.methodText(),
      path,
    });
    const debug = headers[AUTHZ_DEBUG_HEADER];
    const explain = (debug === "1" || debug === "true") &&
      explanationAudienceOf(settingsInForce(this.#snapshot()))(this.#conn);
    const reply = explain
      ? { ...DENIED, headers: `x-mesh-authz-reason: ${d.reason.replace(/[\r\n]/g, " ")}\r\n` }
      : DENIED;
    return { reply, addFields: null, target: null };
  }
}

/** A verdict with one more header line for the forwarded request (a reply is left as it is). */
function withField(v: FilterVerdict | null, line: Uint8Array): FilterVerdict {
  if (v === null) return { reply: null, addFields: line, target: null };
  if (v.reply !== null) return v;
  if (v.addFields === null) return { ...v, addFields: line };
  const both = new Uint8Array(v.addFields.length + line.length);
  both.set(v.addFields, 0);
  both.set(line, v.addFields.length);
  return { ...v, addFields: both };
}

/** The answer to a target that normalization refuses (`%00`, `#`, userinfo): 400, as Envoy's. */
const BAD_PATH: FilterVerdict = {
  reply: { status: 400, headers: "", body: "Bad Request" },
  addFields: null,
  target: null,
};

/**
 * The target normalized with the mesh's option (shared's normalizePath), or null when it must be
 * refused with 400 (`%00`, `#`, an absolute-form target without authority or with userinfo).
 */
export function normalizedTarget(target: string, option: PathNormalization): NormalizedPath | null {
  try {
    return normalizePath(target, option);
  } catch (e) {
    if (!(e instanceof PathError)) throw e;
    return null;
  }
}

/**
 * Whether some option's normalization could change the target or refuse it: an absolute-form target,
 * or a path holding `%`, `\`, `//` or a segment starting with `.` before any `?`. A byte scan, so
 * the common request allocates nothing here.
 */
function mayNeedNormalization(h: HttpHead): boolean {
  const b = h.buf;
  if (b[h.targetStart] !== 0x2f) return b[h.targetStart] !== 0x2a;
  for (let i = h.targetStart + 1; i < h.targetEnd; i++) {
    const c = b[i];
    if (c === 0x3f) return false;
    if (c === 0x25 || c === 0x5c || ((c === 0x2e || c === 0x2f) && b[i - 1] === 0x2f)) return true;
  }
  return false;
}
