import assert from "node:assert/strict";
import { processDeadline, within } from "../../../shared/internal/testing/deadline.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { kubectlMissing, kubectlOk } from "./test_support.ts";

const main = new URL("./main.ts", import.meta.url).pathname;

Deno.test(requires(kubectlMissing(), {
  name:
    "deno task kube-api: prints url and kubeconfig as one JSON line, serves kubectl, writes the state dir, stops on SIGTERM",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "kube-api-main-" });
    const deadline = processDeadline(60_000, "kube-api main.ts");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-net",
        "--allow-env",
        "--allow-sys",
        main,
        "--dir",
        dir,
      ],
      stdout: "piped",
      stderr: "inherit",
      signal: deadline.signal,
    }).spawn();
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let line = "";
      while (!line.includes("\n")) {
        const { value, done } = await within(reader.read(), 30_000, "the JSON line of kube-api");
        if (done) break;
        line += value;
      }
      const info = JSON.parse(line.trim());
      assert.equal(info.kubeconfig, `${dir}/kubeconfig`);
      assert.match(info.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.ok((await Deno.readTextFile(`${dir}/ca.crt`)).startsWith("-----BEGIN CERTIFICATE-----"));
      assert.match(
        await kubectlOk(info.kubeconfig, ["get", "namespaces", "-o", "name"]),
        /namespace\/kube-system/,
      );
      child.kill("SIGTERM");
      await reader.cancel();
      const status = await child.status;
      assert.equal(status.code, 0);
    } finally {
      deadline.end();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
