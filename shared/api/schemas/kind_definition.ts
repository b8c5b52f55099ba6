/**
 * The contract every resource kind fulfils: its schema (structure and types) and its rules
 * (Istio's cross-field validation that a schema cannot express).
 *
 * @module
 */
import type { TSchema } from "@sinclair/typebox";
import type { Finding, RuleContext } from "../finding.ts";

/** The two API groups of the mesh; each also answers to Istio's group of the same name. */
export type ApiGroupName = "security" | "networking";

/**
 * A kind's schema as the public API sees it: a JSON Schema object (built with TypeBox) whose
 * `static` member carries the TypeScript type of the values it accepts.
 */
export interface KindSchema {
  /** The TypeScript type of a valid value; a type-level member, absent at run time. */
  static: unknown;
  /** JSON Schema keywords (type, properties, title, description, ...). */
  [keyword: string]: unknown;
}

/** Everything the validator knows about one kind. */
export interface KindDefinition<S extends KindSchema = KindSchema> {
  /** The kind, as written in `kind:`. */
  kind: string;
  /** Which API group it belongs to. */
  group: ApiGroupName;
  /** Lower-case plural, as in the CRD name `<plural>.<group>`. */
  plural: string;
  /** Schema of the whole resource (envelope plus spec). */
  schema: S;
  /**
   * Istio's semantic checks. Called even when the schema reported errors, so that every problem is
   * reported at once: a rule must not assume that fields have their schema types.
   */
  rules(resource: S["static"], ctx: RuleContext): Finding[];
}

/** Declares a kind; exists so that `rules` is checked against the schema's static type. */
export function defineKind<S extends TSchema>(def: KindDefinition<S>): KindDefinition<S> {
  return def;
}
