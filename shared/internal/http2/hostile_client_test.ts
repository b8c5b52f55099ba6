/**
 * Hostile HTTP/2 servers (`hostile_server.py`, raw frames) against the codec's client role: the proxy's
 * connections to apps and to other proxies. The client opens streams 1, 3 and 5; each case asserts how
 * each stream ends (its body, or the error code it fails with), the RST_STREAM or GOAWAY the client
 * sends, and that the process goes on (a crash fails the whole file).
 */
import assert from "node:assert/strict";
import { processDeadline, within } from "../testing/deadline.ts";
import { pythonModulesMissing, requires } from "../testing/prerequisites.ts";
import { bodyText, connectClient, get } from "./connection_test_support.ts";
import {
  CANCEL,
  COMPRESSION_ERROR,
  ENHANCE_YOUR_CALM,
  FLOW_CONTROL_ERROR,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
} from "./frame.ts";
import type { Http2Error } from "./limits.ts";
import type { Http2Stream } from "./stream.ts";

const SERVER = new URL("./hostile_server.py", import.meta.url).pathname;

interface ClientCase {
  name: string;
  /** Per stream 1, 3, 5: "ok:<body>" or the error code it fails with. */
  streams: [string | number, string | number, string | number];
  /** The GOAWAY code the client sends ("none": none). */
  goaway: number | "none";
  /** RST_STREAMs [stream, code] the client sends. */
  rst?: [number, number][];
  /** Do not read bodies (a peer that ignores our window must find it closed). */
  noRead?: boolean;
}

const CASES: ClientCase[] = [
  { name: "goaway-open-streams", streams: ["ok:one", REFUSED_STREAM, REFUSED_STREAM], goaway: "none" },
  {
    name: "goaway-before-settings",
    streams: [PROTOCOL_ERROR, PROTOCOL_ERROR, PROTOCOL_ERROR],
    goaway: PROTOCOL_ERROR,
  },
  { name: "goaway-after-close", streams: ["ok:", "ok:", "ok:"], goaway: "none" },
  { name: "goaway-repeated", streams: ["ok:one", REFUSED_STREAM, REFUSED_STREAM], goaway: "none" },
  { name: "rst-flood", streams: ["ok:one", CANCEL, REFUSED_STREAM], goaway: "none" },
  {
    name: "ping-flood",
    streams: [ENHANCE_YOUR_CALM, ENHANCE_YOUR_CALM, ENHANCE_YOUR_CALM],
    goaway: ENHANCE_YOUR_CALM,
  },
  {
    name: "settings-flood",
    streams: [ENHANCE_YOUR_CALM, ENHANCE_YOUR_CALM, ENHANCE_YOUR_CALM],
    goaway: ENHANCE_YOUR_CALM,
  },
  { name: "push-promise", streams: [PROTOCOL_ERROR, PROTOCOL_ERROR, PROTOCOL_ERROR], goaway: PROTOCOL_ERROR },
  {
    name: "hpack-garbage",
    streams: [COMPRESSION_ERROR, COMPRESSION_ERROR, COMPRESSION_ERROR],
    goaway: COMPRESSION_ERROR,
  },
  {
    name: "table-size-huge",
    streams: [COMPRESSION_ERROR, COMPRESSION_ERROR, COMPRESSION_ERROR],
    goaway: COMPRESSION_ERROR,
  },
  {
    name: "bad-response-headers",
    streams: [PROTOCOL_ERROR, PROTOCOL_ERROR, PROTOCOL_ERROR],
    goaway: "none",
    rst: [[1, PROTOCOL_ERROR], [3, PROTOCOL_ERROR], [5, PROTOCOL_ERROR]],
  },
  {
    name: "content-length-mismatch",
    streams: [PROTOCOL_ERROR, CANCEL, CANCEL],
    goaway: "none",
    rst: [[1, PROTOCOL_ERROR]],
  },
  {
    name: "window-update-overflow",
    streams: [FLOW_CONTROL_ERROR, FLOW_CONTROL_ERROR, FLOW_CONTROL_ERROR],
    goaway: FLOW_CONTROL_ERROR,
  },
  {
    name: "data-over-window",
    streams: [FLOW_CONTROL_ERROR, CANCEL, CANCEL],
    goaway: "none",
    rst: [[1, FLOW_CONTROL_ERROR]],
    noRead: true,
  },
  {
    name: "response-headers-too-large",
    streams: [PROTOCOL_ERROR, CANCEL, CANCEL],
    goaway: "none",
    rst: [[1, PROTOCOL_ERROR]],
  },
];

async function outcome(s: Http2Stream, noRead: boolean): Promise<string | number> {
  try {
    await s.response;
    if (noRead) return (await s.closed).code;
    return `ok:${await bodyText(s)}`;
  } catch (e) {
    return (e as Http2Error).code;
  }
}

async function firstLine(
  stream: ReadableStream<Uint8Array>,
): Promise<{ line: string; rest: Promise<string> }> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const [line, ...more] = text.split("\n");
  const rest = (async () => {
    let all = more.join("\n");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return all;
      all += decoder.decode(value, { stream: true });
    }
  })();
  return { line, rest };
}

const missing = pythonModulesMissing(["hpack"], "python3-h2");

for (const c of CASES) {
  Deno.test(requires(missing, {
    name: `hostile server: ${c.name}`,
    async fn() {
      const deadline = processDeadline(30_000, `hostile_server.py ${c.name}`);
      const child = new Deno.Command("/usr/bin/python3", {
        args: [SERVER, c.name],
        stdout: "piped",
        stderr: "inherit",
        signal: deadline.signal,
      }).spawn();
      const { line, rest } = await firstLine(child.stdout);
      const port = Number(line.replace("PORT ", ""));
      const { conn } = await connectClient(port);
      const streams = [1, 3, 5].map((i) => conn.request(get(`/s${i}`), { endStream: true }));
      const got = await within(
        Promise.all(streams.map((s) => outcome(s, c.noRead === true))),
        15_000,
        "streams",
      );
      const status = await child.status;
      deadline.end();
      const sent = JSON.parse(await rest) as { goaway: [number, number, string][]; rst: [number, number][] };
      conn.close();
      await within(conn.closed, 5000, "client closed");
      assert.equal(status.code, 0);
      assert.deepEqual(got, c.streams, JSON.stringify(sent));
      const codes = sent.goaway.map((g) => g[1]);
      if (c.goaway === "none") assert.deepEqual(codes.filter((x) => x !== 0), [], JSON.stringify(sent));
      else assert.equal(codes[0], c.goaway, JSON.stringify(sent));
      for (const r of c.rst ?? []) {
        assert.ok(sent.rst.some(([s, code]) => s === r[0] && code === r[1]), JSON.stringify(sent));
      }
    },
  }));
}
