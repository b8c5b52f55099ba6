/**
 * Reading the flags of `meshd discovery` one by one: each flag's given text, else the variable
 * named by its envDefault, else its default, parsed by type the way pflag does, with every error
 * recorded (naming the flag, the value and the reason) instead of thrown; and the value checks
 * ./discovery_flags.ts applies.
 *
 * @module
 */
import {
  HOST_NAME,
  IPV6,
  type ListenAddress,
  parseDecimal,
  parseGoBool,
  parseGoDuration,
  parseGoInt,
  parseListenAddress,
  safeInteger,
  showValue,
  type ValueResult,
} from "../../shared/internal/cli/go_values.ts";
import { DISCOVERY_FLAGS, type DiscoveryFlag } from "./discovery_flag_table.ts";
import type { MeshdEnvironment } from "./environment.ts";

/**
 * The flag values as given, by flag name: text for scalars, the items for list types, undefined when
 * not given.
 */
export type RawDiscoveryFlags = Readonly<Record<string, string | readonly string[] | undefined>>;

const FLOAT32_MAX = 3.4028234663852886e38;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Reads one flag's value or default and parses it by type, recording errors. */
export class FlagReader {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];

  constructor(private readonly raw: RawDiscoveryFlags, private readonly env: MeshdEnvironment) {}

  #flag(name: string): DiscoveryFlag {
    const flag = DISCOVERY_FLAGS.find((f) => f.name === name);
    if (!flag) throw new Error(`no flag --${name} in the table`);
    return flag;
  }

  /** Whether the flag was given on the command line. */
  isGiven(name: string): boolean {
    return this.raw[name] !== undefined;
  }

  /** The value given, if any; a flag without effect that is given gets a warning. */
  #given(flag: DiscoveryFlag): string | readonly string[] | undefined {
    const given = this.raw[flag.name];
    if (given !== undefined && flag.effect === "no effect yet") {
      this.warnings.push(`--${flag.name} has no effect yet: ${flag.reason}`);
    }
    return given;
  }

  /** The given text, else the variable named by envDefault when set, else the default. */
  #text(name: string): { text: string; flag: DiscoveryFlag } {
    const flag = this.#flag(name);
    const given = this.#given(flag);
    if (given !== undefined) return { text: String(given), flag };
    const fromEnv = flag.envDefault ? this.env[flag.envDefault] : undefined;
    return { text: typeof fromEnv === "string" ? fromEnv : String(flag.default), flag };
  }

  #parse<T>(name: string, fallback: T, parse: (text: string) => ValueResult<T>): T {
    const { text, flag } = this.#text(name);
    const r = parse(text);
    if (r.ok) return r.value;
    const from = flag.envDefault && this.raw[name] === undefined ? ` (from $${flag.envDefault})` : "";
    this.errors.push(`--${name}${from}: ${showValue(text)} ${r.reason}`);
    return fallback;
  }

  string(name: string, check?: (text: string) => string | undefined): string {
    const fallback = String(this.#flag(name).default);
    return this.#parse(name, fallback, (text) => {
      const reason = check?.(text);
      return reason === undefined ? { ok: true, value: text } : { ok: false, reason };
    });
  }

  list(name: string): readonly string[] {
    const flag = this.#flag(name);
    return (this.#given(flag) ?? flag.default) as readonly string[];
  }

  bool(name: string): boolean {
    return this.#parse(name, false, parseGoBool);
  }

  duration(name: string, check: (ms: number) => string | undefined): number {
    const fallback = parseGoDuration(String(this.#flag(name).default));
    return this.#parse(name, fallback.ok ? fallback.value : 0, (text) => {
      const r = parseGoDuration(text);
      const reason = r.ok ? check(r.value) : undefined;
      return reason === undefined ? r : { ok: false, reason };
    });
  }

  int(name: string, min: bigint, max: bigint): number {
    return this.#parse(name, Number(this.#flag(name).default), (text) => {
      const r = parseGoInt(text, min, max);
      return r.ok ? safeInteger(r.value) : r;
    });
  }

  float32(name: string): number {
    return this.#parse(name, Number(this.#flag(name).default), (text) => {
      const r = parseDecimal(text);
      if (r.ok && Math.abs(r.value) > FLOAT32_MAX) {
        return { ok: false, reason: "is out of range for a float32" };
      }
      return r.ok ? { ok: true, value: Math.fround(r.value) } : r;
    });
  }

  address(name: string): ListenAddress {
    const fallback = parseListenAddress(String(this.#flag(name).default));
    return this.#parse(name, fallback.ok ? fallback.value : { host: "", port: 0 }, parseListenAddress);
  }

  /** Records a message about a flag's value, for checks that span values or items. */
  error(name: string, message: string): void {
    this.errors.push(`--${name}: ${message}`);
  }
}

/** A check of ./discovery_flags.ts. */
export function positive(ms: number): string | undefined {
  return ms > 0 ? undefined : "must be positive";
}

/** A check of ./discovery_flags.ts. */
export function nonNegative(ms: number): string | undefined {
  return ms >= 0 ? undefined : "must not be negative";
}

/** A check of ./discovery_flags.ts. */
export function dnsLabel(text: string): string | undefined {
  return DNS_LABEL.test(text)
    ? undefined
    : "is not a valid namespace: lowercase letters, digits and '-', starting and ending with a letter " +
      "or digit, at most 63 characters";
}

/** A check of ./discovery_flags.ts. */
export function dnsName(text: string): string | undefined {
  return text.length <= 253 && HOST_NAME.test(text) ? undefined : "is not a valid DNS domain";
}

/** A check of ./discovery_flags.ts. */
export function nonEmpty(text: string): string | undefined {
  return text === "" ? "must not be empty" : undefined;
}

/** A check of ./discovery_flags.ts. */
export function listenHost(text: string): string | undefined {
  const host = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  return text === "*" || HOST_NAME.test(host) || IPV6.test(host)
    ? undefined
    : "is not a host name or IP address (use * for every interface)";
}

/** pflag's stringToString: `a=b,c=d`, repeatable; later keys win. */
export function stringToString(
  r: FlagReader,
  name: string,
  items: readonly string[],
): Record<string, string> {
  const map: Record<string, string> = {};
  for (const item of items) {
    for (const pair of item.split(",")) {
      if (pair === "") continue;
      const eq = pair.indexOf("=");
      if (eq <= 0) r.error(name, `${showValue(pair)} must be formatted as key=value`);
      else map[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return map;
}
