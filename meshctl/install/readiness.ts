/**
 * `--readiness-timeout`: waits for a component's Deployments to report every replica ready and
 * updated (status.readyReplicas and updatedReplicas, as the Deployment controller writes them), with
 * a progress line when the wait starts and whenever what it waits for changes, as istioctl prints
 * `- Processing resources for Istiod. Waiting for Deployment/istio-system/istiod`.
 *
 * @module
 */
import type { CliIo } from "../cli_io.ts";
import { deploymentReady, describe, type KubeApi, objectPath } from "./apply.ts";
import type { RenderedComponent } from "./render.ts";
import { COMPONENT_TITLES as TITLES } from "./titles.ts";

/** How often the Deployments are read again, ms. */
export const POLL_MS = 500;

/**
 * Waits until every Deployment of `c` is ready.
 *
 * @throws Error naming the component, each Deployment not ready and its replica counts, after `timeoutMs`
 */
export async function waitForComponent(
  api: KubeApi,
  c: RenderedComponent,
  timeoutMs: number,
  io: CliIo,
): Promise<void> {
  const deployments = c.objects.filter((o) => o.kind === "Deployment");
  if (deployments.length === 0) return;
  const deadline = Date.now() + timeoutMs;
  let shown = "";
  for (;;) {
    const waiting: string[] = [];
    for (const d of deployments) {
      const live = await api.json<Record<string, unknown>>("GET", objectPath(d));
      const r = deploymentReady(live);
      if (!r.ready) waiting.push(`${d.kind}/${d.metadata.namespace}/${d.metadata.name} (${r.detail})`);
    }
    if (waiting.length === 0) return;
    const line = `- Processing resources for ${TITLES[c.name]}. Waiting for ${waiting.join(", ")}\n`;
    if (line !== shown) io.stdout(line);
    shown = line;
    if (Date.now() >= deadline) {
      throw new Error(
        `${TITLES[c.name]}: not ready within --readiness-timeout: ${waiting.join(", ")} (${
          deployments.map(describe).join(", ")
        })`,
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}
