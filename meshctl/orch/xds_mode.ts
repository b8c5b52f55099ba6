/**
 * Debug over xDS through the orchestrator (meshctl seed, "Authentication" 2: "Commands that contact
 * the daemon directly use a token obtained through the orchestrator by default"; issue 15, item 1b).
 *
 * When a command is given `--xds-address` or `--xds-label` (and not `--lab`), before it runs:
 *
 * - `--xds-label <selector>` picks the first meshd pod in `-i/--meshNamespace` matching the selector
 *   that has a pod IP and is not finished, and port-forwards to its `--xds-port` through the API
 *   server's pods/portforward (./port_forward.ts), as istioctl does. `--authority` defaults to meshd's
 *   service name `meshd.<meshNamespace>.svc`, which meshd's certificate carries.
 * - unless `--cert-dir`, `--xds-token-file` or env MESHCTL_XDS_TOKEN gives credentials, a token is
 *   asked from the TokenRequest API for service account `default` of the mesh namespace, audience
 *   `mesh-ca` (meshd's TOKEN_AUDIENCES default; istioctl asks for `istio-ca` for service account
 *   `default` of the Istio namespace), valid 3600 s; meshd checks it with TokenReview. An identity of
 *   the mesh (root) namespace may read every debug page.
 * - unless `--cert-dir`, `--insecure` or `--plaintext`, meshd's certificate is verified against the mesh
 *   root published in ConfigMap `mesh-ca-root-cert` (key `root-cert.pem`) of the mesh namespace.
 *
 * Without any kubeconfig (no `-c`, KUBECONFIG or ~/.kube/config, not in a pod), `--xds-address` goes on
 * with its own flags' credentials, as before; `--xds-label` is then an error.
 *
 * The token and root are written to a private temporary folder, removed when the run ends.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { join } from "node:path";
import { CERT_DIR_FILES, DEFAULT_XDS_PORT, XDS_TOKEN_ENV } from "../debug_flags.ts";
import { openOrchPortForward, type PortForward } from "./port_forward.ts";
import { endRun } from "./run_end.ts";
import { NoOrchConfigError, type OrchClient, orchClient, orchFlags } from "./orch_client.ts";

/** The token istioctl-style debug requests carry: service account, audience, lifetime in seconds. */
export const XDS_TOKEN_REQUEST = { serviceAccount: "default", audience: "mesh-ca", expirationSeconds: 3600 };

/** The ConfigMap of the mesh root (shared/internal/inject/inject_patch.ts ROOT_CONFIG_MAP), and its key. */
export const ROOT_CONFIG_MAP = { name: "mesh-ca-root-cert", key: "root-cert.pem" };

interface PodList {
  items: { metadata: { name: string }; status?: { podIP?: string; phase?: string } }[];
}

/**
 * A token for debug over xDS from the TokenRequest API.
 *
 * @throws Error naming the service account and the API's answer (e.g. 404 when it does not exist)
 */
export async function requestXdsToken(client: OrchClient): Promise<string> {
  const { serviceAccount, audience, expirationSeconds } = XDS_TOKEN_REQUEST;
  const path = `/api/v1/namespaces/${client.meshNamespace}/serviceaccounts/${serviceAccount}/token`;
  try {
    const answer = await client.api.json<{ status?: { token?: string } }>("POST", path, {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { audiences: [audience], expirationSeconds },
      },
    });
    if (!answer.status?.token) throw new Error("the TokenRequest answer has no status.token");
    return answer.status.token;
  } catch (e) {
    throw new Error(
      `token for meshd (service account ${client.meshNamespace}/${serviceAccount}, audience ${audience}) ` +
        `from ${client.description}: ${(e as Error).message}`,
    );
  }
}

/**
 * The name of the first meshd pod `selector` matches in the mesh namespace that has an IP and has not
 * finished.
 *
 * @throws Error naming the selector and namespace when none does
 */
export async function meshdPod(client: OrchClient, selector: string): Promise<string> {
  const pods = await client.api.json<PodList>("GET", `/api/v1/namespaces/${client.meshNamespace}/pods`, {
    query: { labelSelector: selector },
  });
  const pod = pods.items.find((p) =>
    p.status?.podIP && p.status.phase !== "Succeeded" && p.status.phase !== "Failed"
  );
  if (!pod) {
    throw new Error(
      `--xds-label ${selector}: no meshd pod with an IP in namespace ${client.meshNamespace} ` +
        `(${pods.items.length} matched) at ${client.description}`,
    );
  }
  return pod.metadata.name;
}

async function rootPem(client: OrchClient): Promise<string> {
  const path = `/api/v1/namespaces/${client.meshNamespace}/configmaps/${ROOT_CONFIG_MAP.name}`;
  const cm = await client.api.json<{ data?: Record<string, string> }>("GET", path).catch((e: Error) => {
    throw new Error(`meshd's root for --xds-address: ${e.message}; give --cert-dir or --insecure`);
  });
  const pem = cm.data?.[ROOT_CONFIG_MAP.key];
  if (!pem) {
    throw new Error(
      `ConfigMap ${client.meshNamespace}/${ROOT_CONFIG_MAP.name} has no ${ROOT_CONFIG_MAP.key}`,
    );
  }
  return pem;
}

const folders = new WeakMap<CommandUnknownOpts, string>();
const forwards = new WeakMap<CommandUnknownOpts, PortForward>();
const clients = new WeakMap<CommandUnknownOpts, OrchClient>();

/** Prepares `cmd`'s xDS flags as the module docs say; a no-op unless it has --xds-address or --xds-label. */
async function useOrchXds(top: CommandUnknownOpts, cmd: CommandUnknownOpts): Promise<void> {
  const opts = cmd.opts() as Record<string, unknown>;
  const label = opts.xdsLabel === undefined ? undefined : String(opts.xdsLabel);
  if (label !== undefined && opts.xdsAddress !== undefined) {
    throw new Error("--xds-label selects meshd's pod, --xds-address names an address: give one of them");
  }
  const hasCredentials = opts.certDir !== undefined || opts.xdsTokenFile !== undefined ||
    !!Deno.env.get(XDS_TOKEN_ENV);
  const needsRoot = opts.certDir === undefined && opts.insecure !== true && opts.plaintext !== true;
  if (label === undefined && hasCredentials) return;
  let client: OrchClient;
  try {
    client = orchClient(orchFlags(cmd));
  } catch (e) {
    // --xds-address without any orchestrator: as before, the flags' own credentials or none.
    if (e instanceof NoOrchConfigError && label === undefined) return;
    throw e;
  }
  try {
    if (label !== undefined) {
      const port = opts.xdsPort === undefined ? DEFAULT_XDS_PORT : Number(opts.xdsPort);
      const pod = await meshdPod(client, label);
      const forward = await openOrchPortForward(client, client.meshNamespace, pod, port);
      forwards.set(top, forward);
      cmd.setOptionValueWithSource("xdsAddress", forward.localAddress, "env");
      cmd.setOptionValueWithSource("xdsLabel", undefined, "env");
      if (opts.authority === undefined && opts.plaintext !== true) {
        cmd.setOptionValueWithSource("authority", `meshd.${client.meshNamespace}.svc`, "env");
      }
    }
    if (hasCredentials) return;
    const dir = await Deno.makeTempDir({ prefix: "meshctl-xds-" });
    folders.set(top, dir);
    const tokenFile = join(dir, "token");
    await Deno.writeTextFile(tokenFile, await requestXdsToken(client), { mode: 0o600 });
    cmd.setOptionValueWithSource("xdsTokenFile", tokenFile, "env");
    if (needsRoot) {
      await Deno.writeTextFile(join(dir, CERT_DIR_FILES.root), await rootPem(client));
      cmd.setOptionValueWithSource("certDir", dir, "env");
    }
  } finally {
    // A forward's WebSockets use the client's TLS settings: it is closed with the forward, at the end.
    if (forwards.has(top)) clients.set(top, client);
    else await client.close();
  }
}

/**
 * Adds the hook that gives `--xds-address`/`--xds-label` commands their orchestrator credentials
 * (skipped with `--lab`, which has its own).
 */
export function addOrchXdsMode(program: CommandUnknownOpts): void {
  program.hook("preAction", async (top, action) => {
    if ((top.opts() as { lab?: string }).lab) return;
    const chain: CommandUnknownOpts[] = [];
    for (let c: CommandUnknownOpts | null = action; c; c = c.parent) chain.push(c);
    const cmd = chain.find((c) =>
      c.getOptionValueSource("xdsAddress") === "cli" || c.getOptionValueSource("xdsLabel") === "cli"
    );
    if (cmd) await useOrchXds(top, cmd);
  });
}

/**
 * Closes the port-forward of a run of `program`, removes the token and root it wrote, and ends what
 * else the run registered (./run_end.ts).
 */
export async function closeOrchXdsMode(program: CommandUnknownOpts): Promise<void> {
  const dir = folders.get(program);
  folders.delete(program);
  if (dir !== undefined) await Deno.remove(dir, { recursive: true });
  await forwards.get(program)?.close();
  forwards.delete(program);
  await clients.get(program)?.close();
  clients.delete(program);
  await endRun(program);
}
