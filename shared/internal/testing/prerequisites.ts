/**
 * What a test needs from the host (root, httpbin, a shell, openssl, PyJWT) and what happens when it is
 * missing: on a developer's machine the test is ignored through Deno's `ignore:` with the reason in its
 * name; under `CI=true` it runs and fails naming what is missing, so a CI host that is not root or lacks
 * a package cannot drop tests unseen. `./dev test` installs the Debian packages (`test_packages` in `dev`).
 *
 * @module
 */

/** Why a prerequisite is missing, or undefined when it is there. */
export type Missing = string | undefined;

/** The part of a `Deno.test` or `t.step` definition that `requires` changes. */
interface Definition {
  name: string;
  ignore?: boolean;
  fn: (t: Deno.TestContext) => void | Promise<void>;
}

/** Whether this run is CI's (`CI=true`), where nothing may be skipped for a missing prerequisite. */
export function inCi(): boolean {
  return Deno.permissions.querySync({ name: "env", variable: "CI" }).state === "granted" &&
    Deno.env.get("CI") === "true";
}

/**
 * `def` unchanged when `missing` is undefined. Otherwise, outside CI: `def` with `ignore: true` and
 * "(ignored: <missing>)" appended to its name; under `CI=true`: `def` whose `fn` throws an Error that
 * names the test and what is missing.
 */
export function requires<T extends Definition>(missing: Missing, def: T): T {
  if (missing === undefined) return def;
  if (inCi()) {
    return {
      ...def,
      fn(): void {
        throw new Error(`${def.name}: CI=true and ${missing}: install it (./dev test does, as root)`);
      },
    };
  }
  return { ...def, name: `${def.name} (ignored: ${missing})`, ignore: true };
}

/** Undefined when `name` is a file in a standard bin directory, else "<name> is not installed". */
export function commandMissing(name: string): Missing {
  for (const dir of ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]) {
    try {
      if (Deno.statSync(`${dir}/${name}`).isFile) return undefined;
    } catch {
      // Not in this directory: try the next.
    }
  }
  return `${name} is not installed`;
}

/** Undefined when `/usr/bin/python3` imports each of `modules`, else why not (naming Debian's `packages`). */
export function pythonModulesMissing(modules: string[], packages: string): Missing {
  try {
    const ok = new Deno.Command("/usr/bin/python3", {
      args: ["-c", `import ${modules.join(", ")}`],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
    return ok ? undefined : `python3 cannot import ${modules.join(", ")} (Debian: ${packages})`;
  } catch {
    return "python3 is not installed";
  }
}

/** Undefined when Debian's httpbin and gunicorn, which the data-path tests proxy to, are installed. */
export function httpbinMissing(): Missing {
  return commandMissing("gunicorn") === undefined
    ? pythonModulesMissing(["httpbin"], "python3-httpbin")
    : "Debian's gunicorn is not installed";
}
