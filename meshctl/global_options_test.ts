import assert from "node:assert/strict";
import { Command } from "@commander-js/extra-typings";
import { DEFAULT_MESH_NAMESPACE, globalOptions } from "./global_options.ts";

Deno.test("globalOptions: the root's -n and -i as parsed; a command without the root gets the defaults", async () => {
  let seen: unknown;
  const root = new Command("meshctl").option("-i, --meshNamespace <ns>", "", DEFAULT_MESH_NAMESPACE)
    .option("-n, --namespace <ns>", "", "");
  root.addCommand(new Command("sub").action((_opts, cmd) => void (seen = globalOptions(cmd))));
  await root.parseAsync(["-n", "foo", "sub"], { from: "user" });
  assert.deepEqual(seen, { namespace: "foo", meshNamespace: "mesh-system" });
  await root.parseAsync(["-i", "istio-system", "sub"], { from: "user" });
  assert.deepEqual(seen, { namespace: "", meshNamespace: "istio-system" });
  const alone = new Command("sub").action((_opts, cmd) => void (seen = globalOptions(cmd)));
  await alone.parseAsync([], { from: "user" });
  assert.deepEqual(seen, { namespace: "", meshNamespace: DEFAULT_MESH_NAMESPACE });
});
