/**
 * The ADS sync status of one stream and xDS type, as meshd's /debug/syncz serves it (meshd's ADS
 * server fills it; `meshctl proxy-status` reads it). Mirrors Istio's syncz: last version and nonce
 * sent, last acknowledged, and the last NACK.
 *
 * @module
 */

/** What /debug/syncz shows for one stream and type. */
export interface TypeSyncStatus {
  /** The xDS type URL, e.g. `type.googleapis.com/mesh.v1.Workload`. */
  typeUrl: string;
  /** Resource names subscribed, or `*` for a wildcard subscription. */
  subscribed: string[] | "*";
  lastSentVersion: string;
  lastSentNonce: string;
  lastAckedVersion: string;
  lastAckedNonce: string;
  /** The message of the last NACK, if the latest response was rejected. */
  lastNack?: string;
  nacks: number;
}
