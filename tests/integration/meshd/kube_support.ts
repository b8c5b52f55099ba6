/**
 * Helpers for the Kubernetes config source's tests: kubectl against the test API server
 * (deploy/lab/kube_api), Istio's CRDs as aliases, and a TCP relay whose connections the test can cut,
 * which breaks watches as a network failure would.
 *
 * @module
 */
import { join } from "node:path";
import { type StartedKubeApi, startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { loadKubeConfig } from "../../../meshd/kube_source/kube_config.ts";
import { KubeSource } from "../../../meshd/kube_source/mod.ts";

const CRDS = join(new URL("../../../deploy/crds", import.meta.url).pathname);

/** Runs kubectl with a kubeconfig, `stdin` piped in. @throws naming the arguments and stderr when it fails */
export async function kubectl(kubeconfig: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command("kubectl", {
    args: ["--kubeconfig", kubeconfig, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const out = await within(child.output(), 30_000, `kubectl ${args.join(" ")}`);
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`kubectl ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return text;
}

/** Istio's CRD for one kind, as an alias group of the mesh's own: any spec, no schema of its own. */
export function istioCrd(group: string, kind: string, plural: string): string {
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.${group}
spec:
  group: ${group}
  names: {kind: ${kind}, listKind: ${kind}List, plural: ${plural}, singular: ${kind.toLowerCase()}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;
}

/** A TCP relay to `target`: `cut()` ends every relayed connection, as a network failure would. */
export interface Relay {
  port: number;
  /** Closes every connection relayed now (both sides). */
  cut(): void;
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to `127.0.0.1:targetPort`. */
export function startRelay(targetPort: number): Relay {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const pipes: Promise<void>[] = [];
  const close = (c: Deno.Conn) => {
    if (!open.delete(c)) return;
    try {
      c.close();
    } catch {
      // already closed
    }
  };
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    try {
      await from.readable.pipeTo(to.writable, { preventClose: true });
    } catch {
      // one side was cut
    }
    close(from);
    close(to);
  };
  const relay: Relay = {
    port: (listener.addr as Deno.NetAddr).port,
    cut: () => [...open].forEach(close),
    async close() {
      listener.close();
      await accepting;
      relay.cut();
      await Promise.all(pipes);
    },
  };
  const accepting = (async () => {
    for await (const client of listener) {
      let server: Deno.Conn;
      try {
        server = await Deno.connect({ hostname: "127.0.0.1", port: targetPort });
      } catch {
        client.close();
        continue;
      }
      open.add(client);
      open.add(server);
      pipes.push(pipe(client, server), pipe(server, client));
    }
  })();
  return relay;
}

/** A kubeconfig that reaches the same server through `port` (the server certificate names 127.0.0.1). */
export async function kubeconfigVia(kubeconfig: string, port: number): Promise<string> {
  const text = await Deno.readTextFile(kubeconfig);
  const via = `${kubeconfig}.via-${port}`;
  await Deno.writeTextFile(via, text.replace(/(https:\/\/127\.0\.0\.1):\d+/g, `$1:${port}`), { mode: 0o600 });
  return via;
}

/** The test API server with the mesh's CRDs, Istio's PeerAuthentication and AuthorizationPolicy, namespace foo. */
export async function cluster(options: { historySize?: number } = {}): Promise<StartedKubeApi> {
  const api = await startKubeApi(options);
  try {
    await kubectl(api.kubeconfig, ["apply", "-f", CRDS]);
    await kubectl(
      api.kubeconfig,
      ["apply", "-f", "-"],
      [
        istioCrd("security.istio.io", "PeerAuthentication", "peerauthentications"),
        istioCrd("security.istio.io", "AuthorizationPolicy", "authorizationpolicies"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: foo}\n",
      ].join("---\n"),
    );
  } catch (e) {
    await api.stop();
    throw e;
  }
  return api;
}

/** A KubeSource on `kubeconfig`, quick to retry, logging into `logs`; the kinds whose watch got 410 Gone go to `gone`. */
export function testSource(kubeconfig: string, logs: string[], gone: string[] = []): KubeSource {
  const choice = loadKubeConfig(kubeconfig, {});
  if (!choice.ok) throw new Error(choice.reason);
  return new KubeSource({
    config: choice.config,
    description: choice.description,
    retryMs: 100,
    onGone: (kind) => gone.push(kind),
    logger: {
      info: (m) => logs.push(`info: ${m}`),
      warn: (m) => logs.push(`warn: ${m}`),
      error: (m) => logs.push(`error: ${m}`),
    },
  });
}
