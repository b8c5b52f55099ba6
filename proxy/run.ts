/**
 * Runs the proxy: the agent (certificate + Delta ADS) and the admin server on the main thread, the
 * inbound listeners in a {@link WorkerPool} that receives every snapshot. Listeners start once the
 * agent is ready (certificate present, all four types answered), as Envoy's come from LDS: nothing is
 * accepted under a guessed policy. Ends on SIGINT, SIGTERM or POST /quitquitquit.
 *
 * @module
 */
import { keptAfterFailure } from "../shared/internal/jwks/refresher.ts";
import { ProxyAgent } from "./agent/agent.ts";
import { nodeId, nodeMetadata, type NodeOptions } from "./agent/node.ts";
import type { LastUpdated } from "./admin/config_dump.ts";
import { type ServerState, startAdmin } from "./admin/server.ts";
import { startStatusServer, type StatusServer } from "./status/server.ts";
import { ProxyLogger } from "./logging/logger.ts";
import { type LogLevels } from "../shared/internal/logging/levels.ts";
import type { ProxyOptions } from "./options/flags.ts";
import type { RuntimeSnapshot } from "./runtime/snapshot.ts";
import { WorkerPool } from "./workers/pool.ts";
import { listenerKey, type WorkerListener } from "./workers/protocol.ts";

/**
 * The listeners of a gateway: one per bind port, with the route configurations bound there (one
 * plain-text `http.<port>`, or the HTTPS servers of that port, picked by SNI). A credential change
 * keeps the listener (its key is the route names), so rotation never rebinds the port.
 */
function gatewayListeners(s: RuntimeSnapshot, address: string): WorkerListener[] {
  const byPort = new Map<number, string[]>();
  for (const rc of Object.values(s.routes)) {
    // A sidecar's routes (VirtualService rules bound to mesh) are never a gateway's listeners.
    if (rc.gateways.includes("mesh")) continue;
    byPort.set(rc.bindPort, [...byPort.get(rc.bindPort) ?? [], rc.name]);
  }
  return [...byPort.entries()].sort(([a], [b]) => a - b).map(([port, names]) => ({
    address,
    port,
    appAddress: "",
    appPort: 0,
    direction: "gateway" as const,
    routeNames: names.sort(),
  }));
}

/** Where messages for the user go. */
export interface RunIo {
  stderr(text: string): void;
}

/**
 * The service account named by a bootstrap token (`sub` = `system:serviceaccount:<ns>:<sa>`), read
 * without verifying (meshd verifies); undefined when the token is not such a JWT.
 */
export function tokenIdentity(token: string): { namespace: string; serviceAccount: string } | undefined {
  const part = token.trim().split(".")[1];
  if (!part) return undefined;
  try {
    const payload = JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/")));
    const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(String(payload.sub));
    return m ? { namespace: m[1], serviceAccount: m[2] } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs until stopped. The caller must end the process after it returns: the ADS connection is left
 * for the kernel to close, with no GOAWAY to meshd (denoland/deno#36788, proxy/agent README).
 *
 * @returns the exit code: 0 after a graceful stop, 1 when start-up fails
 */
export async function runProxy(o: ProxyOptions, io: RunIo): Promise<number> {
  const startedAt = Date.now();
  const logger = new ProxyLogger(o.logLevels);
  const mainLog = logger.scope("main");

  let token: string | undefined;
  try {
    token = await Deno.readTextFile(o.tokenFile);
  } catch (e) {
    if (!o.plaintext) {
      io.stderr(`error: --tokenFile: ${o.tokenFile}: ${(e as Error).message}\n`);
      return 1;
    }
  }
  const identity = token === undefined ? undefined : tokenIdentity(token);
  if (identity && (identity.namespace !== o.namespace || identity.serviceAccount !== o.serviceAccount)) {
    io.stderr(
      `error: --namespace/--serviceAccount: ${o.namespace}/${o.serviceAccount} does not match the ` +
        `token's ${identity.namespace}/${identity.serviceAccount} (--tokenFile ${o.tokenFile})\n`,
    );
    return 1;
  }

  const node: NodeOptions = {
    ip: o.address,
    name: o.nodeName,
    namespace: o.namespace,
    metadata: {
      LABELS: o.labels,
      SERVICE_ACCOUNT: o.serviceAccount,
      // Istio's ProxyConfig field, so that meshctl finds this proxy's admin interface through meshd.
      ...(o.adminPort > 0 ? { PROXY_CONFIG: { proxyAdminPort: o.adminPort } } : {}),
    },
    type: o.type,
  };
  if (o.workloadGroup) node.autoRegisterGroup = o.workloadGroup;

  const agentScope = logger.scope("agent");
  const jwtScope = logger.scope("jwt");
  let agent: ProxyAgent;
  try {
    agent = new ProxyAgent({
      node,
      discoveryAddress: o.discoveryAddress,
      plaintext: o.plaintext,
      rootCertFile: o.rootCertFile,
      serverName: o.discoveryServerName,
      ca: token === undefined ? undefined : { tokenFile: o.tokenFile, address: o.caAddress },
      logger: {
        debug: (m) => agentScope.debug(m),
        info: (m) => agentScope.info(m),
        warn: (m) => agentScope.warn(m),
      },
      jwks: {
        onFetch: (e) => {
          if (!e.ok) {
            jwtScope.warn(`JWKS fetch failed; ${keptAfterFailure(e)}`, {
              uri: e.source,
              error: e.error,
              retry_in_ms: e.retryInMs,
            });
          } else if (e.changed) jwtScope.info("JWKS fetched: new key set", { uri: e.source });
          else jwtScope.debug("JWKS fetched: unchanged", { uri: e.source });
        },
      },
    });
  } catch (e) {
    io.stderr(`error: ${(e as Error).message}\n`);
    return 1;
  }

  let state: ServerState = "PRE_INITIALIZING";
  let pool: WorkerPool | undefined;
  const lastUpdated: LastUpdated = {};
  let previous: RuntimeSnapshot | undefined;
  agent.onChange((s) => {
    const now = Date.now();
    for (const [type, version] of Object.entries(s.versions)) {
      if (previous?.versions[type] !== version) lastUpdated[type] = now;
    }
    if (s.certificate?.certChainPem !== previous?.certificate?.certChainPem) lastUpdated.certificate = now;
    previous = s;
    if (pool?.started) {
      pool.publish(s);
      if (o.type === "router") updateGatewayListeners(s);
    }
  });

  let quit!: () => void;
  const quitting = new Promise<void>((resolve) => (quit = resolve));
  const workerCount = o.concurrency;
  const bootstrap = {
    node: { id: nodeId(node), cluster: `${o.nodeName}.${o.namespace}`, metadata: nodeMetadata(node) },
    discoveryAddress: o.discoveryAddress,
    plaintext: o.plaintext,
    caAddress: o.caAddress ?? o.discoveryAddress,
    adminPort: o.adminPort,
    concurrency: workerCount,
    inbound: o.inbound.map((p) => ({ address: o.inboundBindAddress, ...p })),
    outbound: o.outbound,
    ...(o.type === "router" ? { gatewayAddress: o.inboundBindAddress } : {}),
    connectionLimits: o.connectionLimits,
    startedAt,
  };
  const staticListeners: WorkerListener[] = [
    ...bootstrap.inbound,
    ...(o.outbound
      ? [{
        address: o.outbound.host,
        port: o.outbound.port,
        appAddress: "",
        appPort: 0,
        direction: "outbound" as const,
      }]
      : []),
  ];
  // Gateway listeners follow the route configurations (LDS): one update at a time, only on change.
  let gatewayKeys = "";
  let gatewayUpdates: Promise<void> = Promise.resolve();
  const listenersOf = (s: RuntimeSnapshot): WorkerListener[] =>
    o.type === "router"
      ? [...staticListeners, ...gatewayListeners(s, o.inboundBindAddress)]
      : staticListeners;
  const updateGatewayListeners = (s: RuntimeSnapshot): void => {
    const wanted = listenersOf(s);
    const keys = wanted.map(listenerKey).join("\n");
    if (keys === gatewayKeys) return;
    gatewayKeys = keys;
    gatewayUpdates = gatewayUpdates.then(async () => {
      const errors = await pool!.setListeners(wanted);
      for (const error of errors) mainLog.error("gateway listener failed", { error });
      mainLog.info("gateway listeners", { listeners: wanted.length - staticListeners.length });
    });
  };
  let admin;
  try {
    admin = startAdmin(o.adminPort, {
      bootstrap,
      snapshot: () => agent.snapshot(),
      lastUpdated: () => ({ ...lastUpdated }),
      agentStatus: () => agent.status(),
      workerCounters: () => pool?.started ? pool.counters() : Promise.resolve([]),
      workersApplied: () => pool?.appliedRevisions() ?? [],
      state: () => state,
      levels: () => logger.levels(),
      setLevels: (levels: Partial<LogLevels>) => {
        logger.setLevels(levels);
        pool?.setLevels(logger.levels());
      },
      quit,
    }, logger.scope("admin"));
  } catch (e) {
    io.stderr(
      `error: --proxy-admin-port: cannot listen on 127.0.0.1:${o.adminPort}: ${(e as Error).message}\n`,
    );
    return 1;
  }
  let status: StatusServer | undefined;
  if (o.statusPort > 0) {
    try {
      status = startStatusServer("0.0.0.0", o.statusPort, {
        probers: o.appProbers,
        ready: () => state === "LIVE",
        log: logger.scope("admin"),
      });
    } catch (e) {
      await admin.close();
      io.stderr(`error: --statusPort: cannot listen on 0.0.0.0:${o.statusPort}: ${(e as Error).message}\n`);
      return 1;
    }
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(signal, quit);
  mainLog.info("proxy starting", {
    node: bootstrap.node.id,
    admin: `127.0.0.1:${admin.port}`,
    workers: workerCount,
  });

  let code = 0;
  try {
    await agent.start();
    const ready = await Promise.race([agent.ready(), quitting.then(() => undefined)]);
    if (ready) {
      state = "INITIALIZING";
      const initial = listenersOf(ready);
      gatewayKeys = initial.map(listenerKey).join("\n");
      pool = new WorkerPool({
        size: workerCount,
        listeners: initial,
        levels: logger.levels(),
        log: logger.scope("workers"),
        connectionLimits: o.connectionLimits,
        meshTlsClient: o.meshTlsClient,
      });
      try {
        await pool.start(agent.snapshot());
      } catch (e) {
        const ports = o.inbound.map((p) => `${o.inboundBindAddress}:${p.port}`);
        if (o.outbound) ports.push(`${o.outbound.host}:${o.outbound.port} (--outbound)`);
        throw new Error(`--inbound: cannot listen on ${ports.join(", ")}: ${(e as Error).message}`);
      }
      // A snapshot that arrived while the workers started.
      if (agent.snapshot().revision !== ready.revision) {
        pool.publish(agent.snapshot());
        if (o.type === "router") updateGatewayListeners(agent.snapshot());
      }
      state = "LIVE";
      mainLog.info("proxy live", { revision: agent.snapshot().revision });
      await quitting;
    }
  } catch (e) {
    io.stderr(`error: ${(e as Error).message}\n`);
    code = 1;
  }
  state = "DRAINING";
  for (const signal of ["SIGINT", "SIGTERM"] as const) Deno.removeSignalListener(signal, quit);
  await gatewayUpdates;
  await pool?.close();
  await agent.stop({ exiting: true });
  await status?.close();
  await admin.close();
  mainLog.info("proxy stopped");
  return code;
}
