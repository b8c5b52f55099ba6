/**
 * Build information reported by `version` commands: the release from shared/deno.json and the
 * runtime versions.
 *
 * @module
 */
import sharedConfig from "./deno.json" with { type: "json" };

/** What `meshctl version` and `meshd version` print. */
export interface BuildInfo {
  /** Release version, e.g. 0.1.0. */
  version: string;
  /** Deno runtime version. */
  deno: string;
  /** V8 version. */
  v8: string;
  /** TypeScript version. */
  typescript: string;
  /** Operating system and architecture, e.g. linux/x86_64. */
  platform: string;
}

/** The build information of this process. */
export function buildInfo(): BuildInfo {
  return {
    version: sharedConfig.version,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    platform: `${Deno.build.os}/${Deno.build.arch}`,
  };
}
