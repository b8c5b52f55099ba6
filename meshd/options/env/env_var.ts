/**
 * The shape of one row of meshd's environment table (meshd seed, "Environment variables"), shared
 * by the component tables beside this file.
 *
 * @module
 */

/** The registry meshd reads by default, and so the default cluster ID (Istio's `Kubernetes`). */
export const DEFAULT_REGISTRY = "Orchestrator";

/** The value types of the seed's table. */
export type EnvType = "bool" | "string" | "int" | "float" | "duration";

/** One row of the seed's table. */
export interface EnvVar {
  /** The variable's name. */
  readonly name: string;
  /** How its value is parsed. */
  readonly type: EnvType;
  /** The seed's default, as text parsed like a set value; undefined where the seed says 'unset'. */
  readonly default: string | undefined;
  /** The seed's description. */
  readonly description: string;
  /** Smallest accepted value (milliseconds for durations), where a smaller one cannot work. */
  readonly min?: number;
  /** Largest accepted value, where a larger one cannot work (a percentage, a gRPC uint32). */
  readonly max?: number;
  /**
   * For a string variable whose seed lists its values: the values accepted. Another value is an
   * error naming them; the empty string counts as unset.
   */
  readonly values?: readonly string[];
  /**
   * Why the variable has no effect yet. Such a variable is still parsed and validated; when it is
   * set, meshd discovery warns once at start. Absent: something reads the value
   * (tests/structure/settings_test.ts checks that).
   */
  readonly noEffect?: string;
  /**
   * A bool variable this one only matters with: when that one is false and this one is set, meshd
   * warns at start that this one has no effect (Istio's cache knobs need `DISCO_ENABLE_XDS_CACHE`).
   */
  readonly needs?: string;
}
