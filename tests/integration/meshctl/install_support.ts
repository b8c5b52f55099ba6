/**
 * Test helpers of meshctl's install commands: running meshctl in-process against a test API server,
 * playing the Deployment controller (the server has none: a Deployment's status is set through its
 * /status subresource, as the registry tests set pod IPs), and evaluating webhook selectors as the API
 * server does.
 *
 * @module
 */
import { runMeshctl } from "../../../meshctl/cli.ts";
import type { StartedKubeApi } from "../../../deploy/lab/kube_api/mod.ts";

/** What a meshctl run printed and its exit code. */
export interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs meshctl with `-c kubeconfig`; `onOutput` sees standard output as it grows. */
export async function meshctl(
  kubeconfig: string,
  args: string[],
  onOutput?: (out: string) => void,
): Promise<Run> {
  let out = "", err = "";
  const code = await runMeshctl(["-c", kubeconfig, ...args], {
    stdout: (t) => {
      out += t;
      onOutput?.(out);
    },
    stderr: (t) => (err += t),
    setExitCode: () => {},
  });
  return { code, out, err };
}

type Json = Record<string, unknown>;

/** GETs `path` from the server as admin; undefined on 404. */
export async function get(api: StartedKubeApi, path: string): Promise<Json | undefined> {
  const client = Deno.createHttpClient({ caCerts: [api.server.caPem] });
  try {
    const r = await fetch(new URL(path, api.url), {
      headers: { authorization: `Bearer ${api.server.token}` },
      client,
    });
    const body = await r.json();
    if (r.status === 404) return undefined;
    if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(body)}`);
    return body;
  } finally {
    client.close();
  }
}

/** Marks Deployment `ns/name` ready as the Deployment controller would: every replica ready. */
export async function markReady(api: StartedKubeApi, ns: string, name: string): Promise<void> {
  const path = `/apis/apps/v1/namespaces/${ns}/deployments/${name}/status`;
  const d = await get(api, path) as { spec: { replicas?: number }; status?: unknown };
  const client = Deno.createHttpClient({ caCerts: [api.server.caPem] });
  try {
    const n = d.spec.replicas ?? 1;
    d.status = { replicas: n, readyReplicas: n, updatedReplicas: n, availableReplicas: n };
    const r = await fetch(new URL(path, api.url), {
      method: "PUT",
      headers: { authorization: `Bearer ${api.server.token}`, "content-type": "application/json" },
      body: JSON.stringify(d),
      client,
    });
    if (!r.ok) throw new Error(`PUT ${path}: ${r.status} ${await r.text()}`);
    await r.body?.cancel();
  } finally {
    client.close();
  }
}

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

/** Whether a label selector (matchLabels and matchExpressions) selects `labels`; absent selects all. */
export function selects(selector: unknown, labels: Record<string, string>): boolean {
  if (!selector) return true;
  const s = selector as { matchLabels?: Record<string, string>; matchExpressions?: Requirement[] };
  for (const [k, v] of Object.entries(s.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const r of s.matchExpressions ?? []) {
    const has = r.key in labels;
    const ok = r.operator === "In"
      ? has && (r.values ?? []).includes(labels[r.key])
      : r.operator === "NotIn"
      ? !has || !(r.values ?? []).includes(labels[r.key])
      : r.operator === "Exists"
      ? has
      : !has;
    if (!ok) return false;
  }
  return true;
}

/**
 * The meshd Services whose webhooks would inject a new pod with `podLabels` in a namespace with
 * `nsLabels`, over every MutatingWebhookConfiguration in the server.
 */
export async function injectingServices(
  api: StartedKubeApi,
  nsLabels: Record<string, string>,
  podLabels: Record<string, string> = {},
): Promise<string[]> {
  const list = await get(api, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations");
  const out = new Set<string>();
  for (const c of (list?.items ?? []) as Json[]) {
    for (const h of (c.webhooks ?? []) as Json[]) {
      const rules = JSON.stringify(h.rules ?? []);
      if (!rules.includes("pods")) continue;
      if (selects(h.namespaceSelector, nsLabels) && selects(h.objectSelector, podLabels)) {
        out.add(String(((h.clientConfig as Json).service as Json).name));
      }
    }
  }
  return [...out].sort();
}
