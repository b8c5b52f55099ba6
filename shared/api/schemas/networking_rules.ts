/**
 * Checks shared by the networking kinds (ServiceEntry, WorkloadEntry, WorkloadGroup, Gateway,
 * VirtualService): host names, IP addresses, ports and protocols, labels, durations, exportTo,
 * regular expressions and string matches. Each reimplements the Istio check it names, from
 * istio/istio pkg/config/validation (validation.go, agent/validation.go), pkg/config/labels,
 * pkg/config/protocol and pkg/config/host.
 *
 * Rules run even when the schema already failed, so every helper takes `unknown` and ignores values
 * of the wrong type (the schema has reported those).
 *
 * @module
 */
import { error, type FieldPath, type Finding, warning } from "../finding.ts";

/** A parsed YAML/JSON map. */
export type Obj = Record<string, unknown>;

/** The value as a map, or undefined when it is not one. */
export function asObject(v: unknown): Obj | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Obj : undefined;
}

/** The value as a list, or the empty list when it is not one. */
export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** The value as a string, or undefined when it is not one. */
export function asString(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** The value as a finite number, or undefined when it is not one. */
export function asNumber(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** The entries of a map, or none when the value is not a map. */
export function entriesOf(v: unknown): [string, unknown][] {
  const o = asObject(v);
  return o ? Object.entries(o) : [];
}

/** Whether a field is set: present and not null (proto3 treats null as unset). */
export function isSet(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/** The resource's namespace, `default` when absent (as kubectl applies it). */
export function namespaceOf(resource: unknown): string {
  return asString(asObject(asObject(resource)?.metadata)?.namespace) ?? "default";
}

// ---------------------------------------------------------------------------------------------
// Ports and protocols (Istio's pkg/config/protocol)

/**
 * The protocol names Istio's protocol.Parse accepts, compared case-insensitively. UDP and
 * HTTP_PROXY parse too, so Istio's ValidateProtocol accepts them; they are listed last because
 * they are rarely what a user means.
 */
export const PROTOCOLS = [
  "HTTP",
  "HTTPS",
  "HTTP2",
  "GRPC",
  "GRPC-WEB",
  "TCP",
  "TLS",
  "MONGO",
  "REDIS",
  "MYSQL",
  "UDP",
  "HTTP_PROXY",
] as const;
/** A protocol, upper-cased. */
export type Protocol = typeof PROTOCOLS[number];

/** Parses a port protocol case-insensitively, as Istio's protocol.Parse; undefined when unsupported. */
export function parseProtocol(text: unknown): Protocol | undefined {
  if (typeof text !== "string") return undefined;
  const upper = text.toUpperCase();
  return (PROTOCOLS as readonly string[]).includes(upper) ? upper as Protocol : undefined;
}

/** Protocols carried over HTTP (Istio's Instance.IsHTTP). */
export function isHttpProtocol(p: Protocol | undefined): boolean {
  return p === "HTTP" || p === "HTTP2" || p === "HTTP_PROXY" || p === "GRPC" || p === "GRPC-WEB";
}

/** Protocols on top of TLS (Istio's Instance.IsTLS). */
export function isTlsProtocol(p: Protocol | undefined): boolean {
  return p === "HTTPS" || p === "TLS";
}

/** Protocols carried over raw TCP (Istio's Instance.IsTCP). */
export function isTcpProtocol(p: Protocol | undefined): boolean {
  return p === "TCP" || p === "HTTPS" || p === "TLS" || p === "MONGO" || p === "REDIS" || p === "MYSQL";
}

/** The message for a protocol Istio does not know. */
export function unsupportedProtocolMessage(text: string): string {
  return `unsupported protocol "${text}"; use one of ${PROTOCOLS.slice(0, 10).join(", ")} (any case)`;
}

/** Istio's ValidatePortName: a port name is a DNS-1123 label. */
export function checkPortName(name: unknown, at: FieldPath): Finding[] {
  if (typeof name !== "string") return [];
  if (isDns1123Label(name)) return [];
  return [
    error(at, `invalid port name "${name}": must be a DNS-1123 label (lower-case letters, digits, "-")`),
  ];
}

// ---------------------------------------------------------------------------------------------
// DNS names (Istio's pkg/config/labels and agent.ValidateWildcardDomain / ValidateFQDN)

const DNS1123_LABEL = /^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$/;
const WILDCARD_LABEL = /^(?:\*|(?:\*|\*-)?[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?)$/;

/** A DNS-1123 label: at most 63 letters, digits and inner hyphens (Istio's IsDNS1123Label). */
export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

function dnsPreconditions(name: string): string | undefined {
  if (name.length === 0) return "empty domain name not allowed";
  if (name.length > 255) return `domain name "${name.slice(0, 40)}…" too long (max 255)`;
  return undefined;
}

function dnsLabels(domain: string, whole: string): string | undefined {
  const parts = domain.split(".");
  const tld = parts[parts.length - 1];
  if (/^[+-]?[0-9]+$/.test(tld)) {
    return `domain name "${whole}" invalid (top level domain "${tld}" cannot be all-numeric)`;
  }
  for (let i = 0; i < parts.length; i++) {
    // A trailing dot (`istio.io.`) is an unambiguous absolute name, so its empty last label is fine.
    if (i === parts.length - 1 && parts[i] === "") return undefined;
    if (!isDns1123Label(parts[i])) return `domain name "${whole}" invalid (label "${parts[i]}" invalid)`;
  }
  return undefined;
}

/** Istio's ValidateFQDN: a DNS name without wildcards. Returns the reason it is invalid, if it is. */
export function fqdnProblem(name: string): string | undefined {
  return dnsPreconditions(name) ?? dnsLabels(name, name);
}

/**
 * Istio's ValidateWildcardDomain: a DNS name whose first label may be a wildcard (`*`, `*.x`,
 * `*foo.x`). Short names (one label) pass: they are resolved against the resource's namespace.
 */
export function wildcardDomainProblem(name: string): string | undefined {
  const pre = dnsPreconditions(name);
  if (pre) return pre;
  const dot = name.indexOf(".");
  const first = dot < 0 ? name : name.slice(0, dot);
  if (!(first.length <= 63 && WILDCARD_LABEL.test(first))) {
    return `domain name "${name}" invalid (label "${first}" invalid)`;
  }
  return dot < 0 ? undefined : dnsLabels(name.slice(dot + 1), name);
}

/** Istio's ValidatePartialWildCard: a wildcard must be the whole host or the whole first label. */
export function partialWildcardProblem(name: string): string | undefined {
  if (name.includes("*") && name !== "*" && !name.startsWith("*.")) {
    return `partial wildcard "${name}" not allowed`;
  }
  return undefined;
}

/** Whether a host starts with a wildcard (Istio's host.Name.IsWildCarded). */
export function isWildcarded(host: string): boolean {
  return host.startsWith("*");
}

/** Istio's host.Name.Matches: the two hosts (either may be a wildcard) have a name in common. */
export function hostsOverlap(a: string, b: string): boolean {
  const aw = isWildcarded(a);
  const bw = isWildcarded(b);
  if (aw && bw) {
    return a.length < b.length ? b.slice(1).endsWith(a.slice(1)) : a.slice(1).endsWith(b.slice(1));
  }
  if (aw) return b.endsWith(a.slice(1));
  if (bw) return a.endsWith(b.slice(1));
  return a === b;
}

/** Istio's host.Name.SubsetOf: every name `a` covers is covered by `b`. */
export function hostSubsetOf(a: string, b: string): boolean {
  const aw = isWildcarded(a);
  const bw = isWildcarded(b);
  if (aw) return bw && a.length >= b.length && a.slice(1).endsWith(b.slice(1));
  if (bw) return a.endsWith(b.slice(1));
  return a === b;
}

/** Istio's ValidateUnixAddress, on the path after `unix://`. */
export function unixAddressProblem(path: string): string | undefined {
  if (path === "") return "unix address must not be empty";
  // Abstract sockets (`@name`) have no file system path.
  if (path.startsWith("@")) return undefined;
  if (!path.startsWith("/") || path.endsWith("/")) return `"${path}" is not an absolute path to a file`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Labels (Istio's labels.Instance.Validate, the Kubernetes label syntax)

const QUALIFIED_NAME = "(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS_PREFIX =
  "[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?)*/";
const LABEL_KEY = new RegExp(`^(${DNS_PREFIX})?(${QUALIFIED_NAME})$`);
const LABEL_VALUE = new RegExp(`^(?:${QUALIFIED_NAME})?$`);

/** Validates a label map's keys and values (Istio's labels.Instance.Validate). */
export function checkLabels(labels: unknown, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  for (const [k, v] of entriesOf(labels)) {
    const m = LABEL_KEY.exec(k);
    if (!m) {
      out.push(
        error([...at, k], `invalid label key "${k}": use [prefix/]name with letters, digits, "-", "_", "."`),
      );
    } else if (m[1] !== undefined && m[1].length - 1 > 253) {
      out.push(error([...at, k], `invalid label key "${k}": DNS prefix is longer than 253`));
    } else if (m[2].length > 63) {
      out.push(error([...at, k], `invalid label key "${k}": name is longer than 63`));
    }
    if (typeof v === "string" && !LABEL_VALUE.test(v)) {
      out.push(
        error(
          [...at, k],
          `invalid label value "${v}": use letters, digits, "-", "_", "." (alphanumeric at both ends)`,
        ),
      );
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// exportTo (Istio's validateExportTo and visibility.Instance.Validate)

/**
 * Validates an exportTo list: `.` (own namespace), `*` (all), namespace names, and for a
 * ServiceEntry also `~` (no one); no duplicates; `*` and `~` only alone.
 */
export function checkExportTo(
  exportTo: unknown,
  namespace: string,
  at: FieldPath,
  allowNone: boolean,
): Finding[] {
  const list = asArray(exportTo);
  const out: Finding[] = [];
  const seen = new Set<string>();
  list.forEach((e, i) => {
    if (typeof e !== "string") return;
    const key = e === "." ? namespace : e;
    if (seen.has(key)) {
      out.push(error(
        [...at, i],
        key !== e
          ? `duplicate entries in exportTo: "." and the current namespace "${namespace}"`
          : `duplicate entry "${e}" in exportTo`,
      ));
      return;
    }
    if (key === "~" && !allowNone) {
      out.push(error([...at, i], "exportTo ~ (no one) is only allowed for a ServiceEntry"));
    } else if (key !== "*" && key !== "~" && !isDns1123Label(key)) {
      out.push(error([...at, i], `invalid exportTo entry "${e}": use ".", "*", or a namespace name`));
    } else {
      seen.add(key);
    }
  });
  if (seen.has("*") && list.length > 1) {
    out.push(error(at, "cannot have both public (*) and other exportTo values"));
  }
  if (seen.has("~") && list.length > 1) out.push(error(at, "cannot export to no one (~) and to someone"));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Regular expressions and StringMatch (Istio's validateStringMatch, validateStringRegexp)

const MAX_REGEX_LENGTH = 1024;

/**
 * Why a regular expression is not valid RE2 (the engine Envoy uses), or undefined. RE2 syntax is
 * approximated: constructs RE2 rejects (look-around, back-references, atomic groups) are refused,
 * RE2-only syntax (`(?P<name>`, inline flags, `\A`, `\z`) is translated, and the rest must
 * compile as a JavaScript regular expression.
 */
export function re2Problem(re: string): string | undefined {
  if (re.length > MAX_REGEX_LENGTH) return `regex is too large, max length allowed is ${MAX_REGEX_LENGTH}`;
  let js = "";
  let inClass = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === "\\") {
      const n = re[i + 1] ?? "";
      if (!inClass && /[1-9]/.test(n)) return `back-references (\\${n}) are not supported by RE2`;
      if (!inClass && n === "k" && re[i + 2] === "<") {
        return "named back-references (\\k<…>) are not supported by RE2";
      }
      if (!inClass && (n === "A" || n === "z")) {
        js += n === "A" ? "^" : "$";
        i++;
        continue;
      }
      js += c + n;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      js += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      js += c;
      // A `]` right after `[` or `[^` is a literal in RE2.
      if (re[i + 1] === "^") js += re[++i];
      if (re[i + 1] === "]") {
        js += "\\]";
        i++;
      }
      continue;
    }
    if (c === "(" && re[i + 1] === "?") {
      const rest = re.slice(i + 2);
      if (/^(?:=|!|<=|<!)/.test(rest)) {
        return "look-around assertions ((?=, (?!, (?<=, (?<!) are not supported by RE2";
      }
      if (rest.startsWith(">")) return "atomic groups ((?>…)) are not supported by RE2";
      if (rest.startsWith("P<")) {
        js += "(?<";
        i += 3;
        continue;
      }
      const flags = /^[imsU-]+(\)|:)/.exec(rest);
      if (flags) {
        // RE2 inline flags; JavaScript has no equivalent, and they do not change validity.
        js += flags[1] === ":" ? "(?:" : "";
        i += 1 + flags[0].length;
        continue;
      }
    }
    js += c;
  }
  try {
    new RegExp(js);
  } catch (e) {
    return `invalid regex: ${(e as Error).message.replace(/^Invalid regular expression: /, "")}`;
  }
  return undefined;
}

/** Validates a regular expression field; Istio's validateStringRegexp. */
export function checkRegex(re: unknown, at: FieldPath): Finding[] {
  if (typeof re !== "string") return [];
  if (re === "") return [error(at, "regex must not be empty")];
  const problem = re2Problem(re);
  return problem
    ? [error(at, `${problem} (Istio uses RE2 syntax: https://github.com/google/re2/wiki/Syntax)`)]
    : [];
}

/** What an empty StringMatch (`{}`) means where it appears. */
export type EmptyStringMatch = "presence" | "any" | "invalid";

/** Options of {@link checkStringMatch}. */
export interface StringMatchOptions {
  /** What `{}` means: header presence, any value (warned), or an error. */
  empty: EmptyStringMatch;
  /** Whether `prefix: ""` is allowed (it is for uri, which Envoy matches as "any path"). */
  allowEmptyPrefix?: boolean;
  /** Whether `regex: "*"` means presence (withoutHeaders). */
  starIsPresence?: boolean;
}

/**
 * Validates a StringMatch: at most one of exact, prefix, regex (Istio's oneof); no empty prefix or
 * regex; a regex valid for RE2 (Istio's validateStringMatch and validateStringMatchRegexp).
 */
export function checkStringMatch(sm: unknown, at: FieldPath, opts: StringMatchOptions): Finding[] {
  const o = asObject(sm);
  if (!o) return [];
  const set = (["exact", "prefix", "regex"] as const).filter((k) => isSet(o[k]));
  if (set.length > 1) {
    return [error(at, `only one of exact, prefix, regex may be set; got ${set.join(" and ")}`)];
  }
  if (set.length === 0) {
    if (opts.empty === "invalid") return [error(at, "one of exact, prefix, regex is required")];
    if (opts.empty === "any") {
      return [
        warning(at, "an empty match (no exact, prefix or regex) matches any value; remove it or set one"),
      ];
    }
    return [];
  }
  const value = o[set[0]];
  if (typeof value !== "string") return [];
  if (opts.empty === "invalid" && value === "") {
    return [error([...at, set[0]], `${set[0]} must not be empty`)];
  }
  if (set[0] === "prefix" && value === "" && !opts.allowEmptyPrefix) {
    return [error([...at, "prefix"], "prefix must not be empty")];
  }
  if (set[0] === "regex" && !(opts.starIsPresence && value === "*")) {
    return checkRegex(value, [...at, "regex"]);
  }
  return [];
}

/** Istio's validatePercentage: 0, or between 0.0001 and 100. */
export function checkPercent(percent: unknown, at: FieldPath): Finding[] {
  const v = asNumber(asObject(percent)?.value);
  if (v === undefined) return [];
  if (v < 0 || v > 100 || (v > 0 && v < 0.0001)) {
    return [error([...at, "value"], `percentage ${v} is neither 0 nor in the range 0.0001..100`)];
  }
  return [];
}
