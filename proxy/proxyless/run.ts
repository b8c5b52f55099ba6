/**
 * `proxy --proxyless <dir>`: the agent of proxyless gRPC applications, as Istio's pilot-agent runs
 * beside them (the grpc-agent template): no data path, no ADS stream of its own. It obtains the
 * workload certificate from meshd's CA (--caAddress, bootstrap token, then renewal over mutual TLS:
 * agent/certificate_manager.ts), writes it to `<dir>` as cert-chain.pem, key.pem (mode 0600) and
 * root-cert.pem (each replaced atomically by a rename, so gRPC's file_watcher never reads half a
 * file), and writes `<dir>/grpc-bootstrap.json` once the first certificate is there.
 *
 * @module
 */
import { join } from "node:path";
import { CertificateManager } from "../agent/certificate_manager.ts";
import { nodeId, nodeMetadata, type NodeOptions } from "../agent/node.ts";
import type { ProxyOptions } from "../options/flags.ts";
import type { CertificateInfo } from "../runtime/snapshot.ts";
import { CERT_FILES, grpcBootstrap } from "./bootstrap.ts";

/** The bootstrap's file name in the output directory. */
export const BOOTSTRAP_FILE = "grpc-bootstrap.json";

async function writeAtomic(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, text, { mode });
  await Deno.rename(tmp, path);
}

/** Writes the three certificate files (the key first: a new chain must never meet the old key). */
export async function writeCertificateFiles(dir: string, c: CertificateInfo): Promise<void> {
  await writeAtomic(join(dir, CERT_FILES.key), c.privateKeyPem, 0o600);
  await writeAtomic(join(dir, CERT_FILES.cert), c.certChainPem, 0o644);
  await writeAtomic(join(dir, CERT_FILES.ca), c.rootsPem, 0o644);
}

/**
 * Runs until SIGINT or SIGTERM.
 *
 * @returns 0 after a stop, 1 when the options or files cannot be used
 */
export async function runProxyless(o: ProxyOptions, io: { stderr(text: string): void }): Promise<number> {
  const dir = o.proxyless!;
  if (!o.caAddress) {
    io.stderr("error: --proxyless needs --caAddress (meshd's --secureGRPCAddr, for the certificate)\n");
    return 1;
  }
  let rootsPem: string;
  try {
    await Deno.mkdir(dir, { recursive: true });
    rootsPem = await Deno.readTextFile(o.rootCertFile);
  } catch (e) {
    io.stderr(`error: --proxyless ${dir} / --rootCertFile ${o.rootCertFile}: ${(e as Error).message}\n`);
    return 1;
  }
  const node: NodeOptions = {
    ip: o.address,
    name: o.nodeName,
    namespace: o.namespace,
    metadata: { LABELS: o.labels, SERVICE_ACCOUNT: o.serviceAccount },
  };
  const bootstrap = grpcBootstrap({
    discoveryAddress: o.discoveryAddress,
    nodeId: nodeId(node),
    metadata: nodeMetadata(node),
    certDir: dir,
  });
  const manager = new CertificateManager({
    address: o.caAddress,
    rootsPem,
    serverName: o.discoveryServerName,
    tokenFile: o.tokenFile,
    namespace: o.namespace,
    serviceAccount: o.serviceAccount,
    logger: { info: (m) => io.stderr(`info: ${m}\n`), warn: (m) => io.stderr(`warning: ${m}\n`) },
  });
  let writes = Promise.resolve();
  manager.onChange((c) => {
    // An expired certificate stays on disk: gRPC keeps its last good files, and peers refuse it anyway.
    if (!c) return;
    writes = writes.then(() => writeCertificateFiles(dir, c)).catch((e) =>
      io.stderr(`error: writing the certificate to ${dir}: ${(e as Error).message}\n`)
    );
  });
  manager.start();
  await manager.firstCertificate();
  await writes;
  await writeAtomic(join(dir, BOOTSTRAP_FILE), JSON.stringify(bootstrap, null, 2) + "\n", 0o644);
  io.stderr(`info: proxyless gRPC bootstrap written: GRPC_XDS_BOOTSTRAP=${join(dir, BOOTSTRAP_FILE)}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      Deno.removeSignalListener("SIGINT", stop);
      Deno.removeSignalListener("SIGTERM", stop);
      resolve();
    };
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
  });
  manager.stop();
  await writes;
  return 0;
}
