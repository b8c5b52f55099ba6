import assert from "node:assert/strict";
import { podStatusColumn } from "./table.ts";

Deno.test("a pod's STATUS column: phase, status.reason, a container's waiting or terminated reason, Terminating", () => {
  const pod = (status: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", ...metadata },
    status,
  });
  assert.equal(podStatusColumn(pod({ phase: "Running" })), "Running");
  assert.equal(podStatusColumn(pod({})), "Unknown");
  assert.equal(podStatusColumn(pod({ phase: "Failed", reason: "Evicted" })), "Evicted");
  assert.equal(
    podStatusColumn(pod({
      phase: "Pending",
      containerStatuses: [{ name: "a", state: { waiting: { reason: "ErrImagePull", message: "…" } } }],
    })),
    "ErrImagePull",
  );
  assert.equal(
    podStatusColumn(pod({
      phase: "Running",
      containerStatuses: [{ name: "a", state: { running: {} } }, {
        name: "b",
        state: { terminated: { reason: "Completed" } },
      }],
    })),
    "Completed",
  );
  assert.equal(
    podStatusColumn(pod({ phase: "Running" }, { deletionTimestamp: "2026-01-01T00:00:00Z" })),
    "Terminating",
  );
});
