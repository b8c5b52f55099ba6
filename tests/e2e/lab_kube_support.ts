/**
 * Helpers of the lab tests whose config goes through kubectl (lab_kube_config_test.ts,
 * lab_kubernetes_test.ts).
 *
 * @module
 */
import assert from "node:assert/strict";
import { labKubectl, type LabState } from "../../deploy/lab/mod.ts";
import { settleMatrix } from "../../deploy/quickstart/live_matrix.ts";
import type { Stage } from "../../deploy/quickstart/probe_matrix.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

/** How long a change may take to show in the matrix (meshd's watch, debounce and push, the proxies). */
export const SETTLE_MS = 10_000;

/** Runs kubectl against lab `lab` (30 s at most); asserts exit code 0; returns stdout. */
export async function kubectl(lab: string, args: string[], stdin?: string): Promise<string> {
  const r = await within(labKubectl(lab, args, { stdin }), 30_000, `kubectl ${args.join(" ")}`);
  assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** Asserts that the quickstart's matrix becomes `stage`'s within {@link SETTLE_MS}. */
export async function expectStage(state: LabState, stage: Stage): Promise<void> {
  const settled = await settleMatrix(state, stage, SETTLE_MS);
  assert.deepEqual(settled.differences, [], `${stage}: not within ${SETTLE_MS} ms`);
}
