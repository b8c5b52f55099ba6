import assert from "node:assert/strict";
import { PROXY_RUN_FLAGS, PROXY_V8_FLAGS } from "./proxy_permissions.ts";

const root = new URL("../../", import.meta.url);
const tasks: Record<string, string> = JSON.parse(Deno.readTextFileSync(new URL("deno.json", root))).tasks;
const entrypoint = (file: string): string[] => {
  const text = Deno.readTextFileSync(new URL(file, root));
  return JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(text)![1]);
};

// The flags are written four times: here, the two deno.json tasks and the image's ENTRYPOINT (a JSON
// file and a Containerfile cannot import them). This test makes them one source in effect.
const places: [string, string[]][] = [
  ["deno.json tasks.proxy", tasks.proxy.split(" ")],
  ["deno.json tasks.compile:proxy", tasks["compile:proxy"].split(" ")],
  [
    "deploy/kubernetes/images/proxy.run.Containerfile ENTRYPOINT",
    entrypoint("deploy/kubernetes/images/proxy.run.Containerfile"),
  ],
];

for (const [where, words] of places) {
  Deno.test(`${where} runs the proxy with PROXY_RUN_FLAGS (permissions and --v8-flags=${PROXY_V8_FLAGS})`, () => {
    const flags = words.filter((w) => w.startsWith("--allow-") || w.startsWith("--v8-flags"));
    assert.deepEqual(flags, [...PROXY_RUN_FLAGS], where);
  });
}
