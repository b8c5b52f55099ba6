/**
 * The node agent's image table: which local program stands in for a container image. The lab pulls
 * no images; each known image maps to a command of this host (Debian packages or this repository),
 * and any other image is refused with `ErrImagePull`, as a kubelet reports an image it cannot pull.
 * Pure.
 *
 * | Image (registry `docker.io/` optional, any tag)       | Runs                                                  |
 * | ----------------------------------------------------- | ----------------------------------------------------- |
 * | `mccutchen/go-httpbin`, `kennethreitz/httpbin`        | `gunicorn -b <bind>:<first containerPort> httpbin:app` |
 * | `curlimages/curl`, `governmentpaas/curl-ssl`          | the container's command and args, as given (default `sleep infinity`) |
 * | the proxy image (meshd's template: `mesh/proxy`)      | `proxy/main.ts` with the container's args             |
 * | the proxy image with a `command` (injected `mesh-init`) | the command, as a `command` replaces an ENTRYPOINT    |
 *
 * `mesh-init`'s command is the injected `sh -c` script of iptables and ip6tables rules
 * (shared/internal/inject/inject_patch.ts `redirectScript`), run as root in the pod's namespace: the
 * pod gets exactly the capture an injected pod gets in a cluster. A container's
 * `securityContext.runAsGroup` becomes its process's gid (`setpriv --regid`; the uid stays root, so
 * the lab's files stay readable): the injected proxy runs with gid 1337, which those rules leave
 * alone (`-m owner --gid-owner 1337`).
 *
 * @module
 */
import { PROXY_RUN_FLAGS } from "../../../shared/internal/proxy_permissions.ts";

/** What the agent does for one container. */
export type ContainerRun =
  | { kind: "process"; argv: string[] }
  | { kind: "refused"; reason: "ErrImagePull"; message: string };

/** The fields of a container the table reads. */
export interface ContainerSpec {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort?: number; protocol?: string }[];
  securityContext?: { runAsGroup?: number };
}

/** How a container's program is run here. */
export interface RunContext {
  /** 127.0.0.1 when the pod has the mesh's sidecar (it holds `<pod IP>:<port>`), else 0.0.0.0. */
  bindIp: string;
  /** The Deno executable and the repository root, for the proxy. */
  deno: string;
  repoRoot: string;
}

/** The repository part of an image reference: registry `docker.io/` and `library/`, tag and digest removed. */
export function imageRepository(image: string): string {
  let name = image.split("@")[0];
  const colon = name.lastIndexOf(":");
  if (colon > name.lastIndexOf("/")) name = name.slice(0, colon);
  return name.replace(/^(docker\.io|index\.docker\.io)\//, "").replace(/^library\//, "");
}

const HTTPBIN = new Set(["mccutchen/go-httpbin", "kennethreitz/httpbin"]);
const SHELL_WITH_CURL = new Set(["curlimages/curl", "governmentpaas/curl-ssl"]);
/** meshd's injection template default (meshd/webhooks/template.ts) and Istio's proxy image. */
export const PROXY_IMAGES: ReadonlySet<string> = new Set(["mesh/proxy", "istio/proxyv2"]);

function firstPort(c: ContainerSpec, fallback: number): number {
  return c.ports?.find((p) => typeof p.containerPort === "number")?.containerPort ?? fallback;
}

/**
 * The program for container `c`.
 *
 * @returns a process argv (under `setpriv` with the container's runAsGroup), or a refusal naming the
 *   image and the table
 */
export function containerRun(c: ContainerSpec, ctx: RunContext): ContainerRun {
  const run = program(c, ctx);
  const gid = c.securityContext?.runAsGroup;
  if (run.kind !== "process" || !Number.isInteger(gid) || gid === 0) return run;
  return { kind: "process", argv: ["/usr/bin/setpriv", `--regid=${gid}`, "--clear-groups", ...run.argv] };
}

function program(c: ContainerSpec, ctx: RunContext): ContainerRun {
  const image = c.image ?? "";
  const repo = imageRepository(image);
  if (HTTPBIN.has(repo)) {
    const port = firstPort(c, repo === "kennethreitz/httpbin" ? 80 : 8080);
    return {
      kind: "process",
      argv: ["/usr/bin/gunicorn", "-b", `${ctx.bindIp}:${port}`, "-k", "gthread", "httpbin:app"],
    };
  }
  if (SHELL_WITH_CURL.has(repo)) {
    const argv = [...(c.command ?? []), ...(c.args ?? [])];
    return { kind: "process", argv: argv.length > 0 ? argv : ["/bin/sleep", "infinity"] };
  }
  if (PROXY_IMAGES.has(repo)) {
    if (c.command !== undefined && c.command.length > 0) {
      return { kind: "process", argv: [...c.command, ...(c.args ?? [])] };
    }
    return {
      kind: "process",
      argv: [
        ctx.deno,
        "run",
        ...PROXY_RUN_FLAGS,
        `${ctx.repoRoot}/proxy/main.ts`,
        ...(c.args ?? []),
      ],
    };
  }
  return {
    kind: "refused",
    reason: "ErrImagePull",
    message: `container ${c.name}: image ${JSON.stringify(image)} is not in the lab node's image table ` +
      `(deploy/lab/node_agent/images.ts: ${[...HTTPBIN, ...SHELL_WITH_CURL, ...PROXY_IMAGES].join(", ")})`,
  };
}
