/**
 * Performs one original application probe against the pod's loopback, as the kubelet would have
 * (Istio's pilot-agent status server, pilot/cmd/pilot-agent/status): an HTTP(S) GET with the
 * configured path, headers, scheme and timeout (HTTPS without certificate verification, as the
 * kubelet); a TCP connect; a gRPC `grpc.health.v1.Health/Check`. Nothing of the kubelet's request is
 * used: the target is always 127.0.0.1 and the configured port, the path and headers are the
 * configuration's, so the status port cannot be used to reach anything else.
 *
 * The answer: 200 when the probe passes (HTTP 200..399, a connection, SERVING); else the application's
 * HTTP status when it is 400 or more, or 500 with the reason.
 *
 * @module
 */
import http from "node:http";
import https from "node:https";
import net from "node:net";
import protobuf from "protobufjs";
import type { AppProber, HttpGetProber } from "../../shared/internal/app_probers.ts";
import { GRPC_STATUS, GrpcChannel, STATUS_NAMES } from "../agent/grpc_channel.ts";

/** What the status port answers for a probe. */
export interface ProbeResult {
  /** 200 on success. */
  status: number;
  /** One line for the body and the log. */
  reason: string;
}

/** The kubelet sends this User-Agent too (kube-probe/<version>). */
const USER_AGENT = "kube-probe/mesh";
/** Kubernetes' default timeoutSeconds. */
const DEFAULT_TIMEOUT_SECONDS = 1;

/** Settles once: the first of response, error or timeout wins and the rest is cleaned up. */
function settleOnce(timeoutMs: number, cleanup: () => void): {
  promise: Promise<ProbeResult>;
  finish(r: ProbeResult): void;
} {
  const { promise, resolve } = Promise.withResolvers<ProbeResult>();
  let done = false;
  const finish = (r: ProbeResult): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    cleanup();
    resolve(r);
  };
  const timer = setTimeout(
    () => finish({ status: 500, reason: `no answer within ${timeoutMs / 1000}s (timeoutSeconds)` }),
    timeoutMs,
  );
  return { promise, finish };
}

/** The request headers: the kubelet's defaults, replaced by configured ones of the same name. */
function requestHeaders(h: HttpGetProber): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {
    "user-agent": USER_AGENT,
    accept: "*/*",
    host: `127.0.0.1:${h.port}`,
  };
  const configured = new Map<string, string[]>();
  for (const { name, value } of h.httpHeaders ?? []) {
    const key = name.toLowerCase();
    configured.set(key, [...(configured.get(key) ?? []), value]);
  }
  for (const [key, values] of configured) headers[key] = key === "host" ? values[0] : values;
  return headers;
}

function httpProbe(h: HttpGetProber, timeoutMs: number): Promise<ProbeResult> {
  const request = (h.scheme === "HTTPS" ? https : http).request({
    host: "127.0.0.1",
    port: h.port,
    path: h.path,
    method: "GET",
    headers: requestHeaders(h),
    agent: false,
    rejectUnauthorized: false,
  });
  const { promise, finish } = settleOnce(timeoutMs, () => request.destroy());
  request.on("response", (res) => {
    const code = res.statusCode ?? 0;
    res.destroy();
    if (code >= 200 && code < 400) finish({ status: 200, reason: `the application answered ${code}` });
    else {finish({
        status: code >= 400 && code <= 599 ? code : 500,
        reason: `the application answered ${code}`,
      });}
  });
  request.on("error", (e) => finish({ status: 500, reason: `cannot reach the application: ${e.message}` }));
  request.end();
  return promise;
}

function tcpProbe(port: number, timeoutMs: number): Promise<ProbeResult> {
  const socket = net.connect({ host: "127.0.0.1", port });
  const { promise, finish } = settleOnce(timeoutMs, () => socket.destroy());
  socket.on("connect", () => finish({ status: 200, reason: `connected to port ${port}` }));
  socket.on("error", (e) => finish({ status: 500, reason: `cannot connect to port ${port}: ${e.message}` }));
  return promise;
}

const health = protobuf.Root.fromJSON({
  nested: {
    HealthCheckRequest: { fields: { service: { type: "string", id: 1 } } },
    HealthCheckResponse: { fields: { status: { type: "int32", id: 1 } } },
  },
});
const CHECK_REQUEST = health.lookupType("HealthCheckRequest");
const CHECK_RESPONSE = health.lookupType("HealthCheckResponse");
/**
 * Largest health answer taken, octets: a HealthCheckResponse is one enum field (a few octets), so an
 * application's larger answer is refused (RESOURCE_EXHAUSTED) before it is buffered.
 */
export const PROBE_MAX_MESSAGE_BYTES = 4096;
/** grpc.health.v1.HealthCheckResponse.ServingStatus. */
const SERVING_STATUS = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];

/**
 * The gRPC probe, on the agent's gRPC channel (the project's HTTP/2 codec over node:net,
 * ../agent/grpc_channel.ts): no grpc-js (about 16 MiB on the main isolate, ../agent/README.md) and no
 * node:http2 in the proxy. Plain text, as the kubelet's gRPC probe: no TLS, so no root bundle is read.
 * A connection of its own per probe, closed after it (no GOAWAY, no retry).
 */
async function grpcProbe(g: { port: number; service?: string }, timeoutMs: number): Promise<ProbeResult> {
  const channel = new GrpcChannel({
    address: `127.0.0.1:${g.port}`,
    plaintext: true,
    connectTimeoutMs: timeoutMs,
    maxMessageBytes: PROBE_MAX_MESSAGE_BYTES,
  });
  try {
    const request = CHECK_REQUEST.encode(CHECK_REQUEST.create({ service: g.service ?? "" })).finish();
    const { status: { code, details }, message } = await channel.unary(
      "/grpc.health.v1.Health/Check",
      request,
      { deadlineMs: timeoutMs },
    );
    if (code === GRPC_STATUS.DEADLINE_EXCEEDED) {
      return { status: 500, reason: `no answer within ${timeoutMs / 1000}s (timeoutSeconds)` };
    }
    if (!message) {
      return {
        status: 500,
        reason: `gRPC health check failed: ${code} ${STATUS_NAMES[code] ?? ""}: ${details}`,
      };
    }
    let status: number;
    try {
      status =
        (CHECK_RESPONSE.toObject(CHECK_RESPONSE.decode(message), { defaults: true }) as { status: number })
          .status;
    } catch (e) {
      return {
        status: 500,
        reason: `gRPC health check failed: the answer did not decode: ${(e as Error).message}`,
      };
    }
    if (status === 1) return { status: 200, reason: "SERVING" };
    return { status: 500, reason: `gRPC health: ${SERVING_STATUS[status] ?? status}` };
  } finally {
    channel.close();
  }
}

/** Runs one probe; never throws (a failure is a result). */
export function runAppProbe(p: AppProber): Promise<ProbeResult> {
  const timeoutMs = (p.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  if (p.httpGet) return httpProbe(p.httpGet, timeoutMs);
  if (p.tcpSocket) return tcpProbe(p.tcpSocket.port, timeoutMs);
  if (p.grpc) return grpcProbe(p.grpc, timeoutMs);
  return Promise.resolve({ status: 500, reason: "the prober has no httpGet, tcpSocket or grpc" });
}
