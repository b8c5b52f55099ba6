/**
 * What meshd writes to the Kubernetes API, done by the elected leader only (issue 14, item 4): the
 * webhook caBundle patcher (meshd/webhooks/ca_bundle_patcher.ts) and the CRD status writer
 * (meshd/kube_source/status_writer.ts). With ENABLE_LEADER_ELECTION (default true) this replica
 * competes for the Lease `meshd-leader` (`meshd-leader-<REVISION>` for a revision) in its namespace
 * (POD_NAMESPACE) under its identity (POD_NAME, else the host name); with false it always leads, as istiod does. The writers start when leadership
 * is gained and stop the moment it is lost. `/debug/leader` shows the election.
 *
 * @module
 */
import type { ApiClient } from "../../shared/internal/kube/api_client.ts";
import type { Logger } from "../logging/mod.ts";
import type { DebugHandlers } from "../monitoring/http_servers.ts";
import {
  alwaysLeader,
  LeaderElector,
  type LeaderElectorOptions,
  type Leadership,
  LEASE_NAME,
} from "./mod.ts";

/** One controller that runs while this replica leads. */
export interface LeaderTask {
  /** For logs. */
  name: string;
  /**
   * Starts it; the returned function stops it (at once: no write may follow). When that function
   * returns a promise (the task's requests and watches ending), the controllers' stop awaits it.
   */
  start(): () => void;
}

/** Options of {@link startLeaderControllers}. */
export interface LeaderControllersOptions {
  api: Pick<ApiClient, "json">;
  /** ENABLE_LEADER_ELECTION. */
  electionEnabled: boolean;
  /** POD_NAMESPACE: where the Lease lives. */
  namespace: string;
  /** POD_NAME, else the host name. */
  identity: string;
  /** REVISION: each control plane revision elects its own leader, as istiod's (`<lease>-<revision>`). */
  revision?: string;
  tasks: LeaderTask[];
  logger: Logger;
  /** Timings for tests (istiod's by default). */
  timings?: Pick<LeaderElectorOptions, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs">;
}

/** What {@link startLeaderControllers} started. */
export interface LeaderControllers {
  leadership: Leadership;
  /** `/debug/leader`: the election's state as JSON. */
  debugHandlers: DebugHandlers;
  /** Stops the tasks and gives the Lease up (a successor takes over at once). */
  stop(): Promise<void>;
}

/**
 * The Lease of a revision: `meshd-leader` for the default one, `meshd-leader-<revision>` for another,
 * so that each revision's leader patches its own webhooks (istiod suffixes its election IDs alike).
 */
export function leaseName(revision: string | undefined): string {
  return revision && revision !== "default" ? `${LEASE_NAME}-${revision}` : LEASE_NAME;
}

/** The identity of this replica: POD_NAME, else the host name (client-go's default is the host name). */
export function electionIdentity(podName: string | undefined): string {
  return podName || Deno.hostname();
}

/** Starts the election and runs `tasks` while this replica leads. */
export function startLeaderControllers(o: LeaderControllersOptions): LeaderControllers {
  const log = o.logger.scope("controllers");
  let leadership: Leadership;
  if (o.electionEnabled) {
    const elector = new LeaderElector({
      api: o.api,
      namespace: o.namespace,
      name: leaseName(o.revision),
      identity: o.identity,
      ...o.timings,
      log,
    });
    leadership = elector;
  } else {
    leadership = alwaysLeader(o.identity);
    log.info(`ENABLE_LEADER_ELECTION is false: ${o.identity} acts as the leader (one replica assumed)`);
  }
  let running: (() => void)[] = [];
  const stopTasks = (): Promise<unknown> => {
    const ended = Promise.all(running.map((s): unknown => s()));
    running = [];
    return ended;
  };
  const follow = (leading: boolean) => {
    void stopTasks();
    if (!leading) return;
    for (const t of o.tasks) {
      running.push(t.start());
    }
  };
  const unsubscribe = leadership.onChange(follow);
  if (leadership.leading) follow(true);
  if (leadership instanceof LeaderElector) leadership.start();
  return {
    leadership,
    debugHandlers: {
      "/debug/leader": () => Promise.resolve(Response.json(leadership.status())),
    },
    stop: async () => {
      unsubscribe();
      await stopTasks();
      await leadership.stop({ release: true });
    },
  };
}
