/**
 * The hostile-input corpus (issue 12, deliverable 9; README.md): every case of smuggling_cases.ts,
 * target_cases.ts and token_cases.ts is sent as raw bytes through three listeners of one lab (the
 * inbound sidecar in plain text from an unproxied client, a client's sidecar over mutual TLS to the
 * server's sidecar, and the ingress gateway), and fails on any bypass or crash:
 *
 * - a case's `never` pattern (the protected resource's body) in what came back;
 * - a smuggled request's marker path in httpbin's access log (it reached the app unseen);
 * - a control that did not get its status (so a proxy that refuses everything fails too);
 * - a proxy that is not alive, or that does not serve a plain GET through every entry, after the corpus.
 *
 * Set HOSTILE_REPORT=<file> to write the markdown table (case, Envoy, us per entry) there.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { labDown, labUnavailable } from "../../deploy/lab/mod.ts";
import {
  caseBytes,
  type CaseContext,
  type EntryName,
  fromApp,
  type HostileCase,
  REFUSALS,
  statuses,
} from "./corpus.ts";
import { type Entry, type HostileLab, startHostileLab } from "./lab.ts";
import type { RawResult } from "./raw_client.ts";
import { SMUGGLING_CASES } from "./smuggling_cases.ts";
import { STREAM_CASES } from "./stream_cases.ts";
import { TARGET_CASES } from "./target_cases.ts";
import { makeTokenKeys, TOKEN_CASES, type TokenKeys } from "./token_cases.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";

const unavailable = labUnavailable() ?? httpbinMissing();

/** Every case, in report order. */
const CASES: HostileCase[] = [
  ...TARGET_CASES.filter((c) => c.group === "control"),
  ...SMUGGLING_CASES,
  ...STREAM_CASES,
  ...TARGET_CASES.filter((c) => c.group !== "control"),
  ...TOKEN_CASES,
];

/** GETs through each entry after the corpus, all of which must get 200. */
const AFTER = 24;

/** What one case did through one entry. */
interface Outcome {
  /** Short form for the report: statuses, or how the connection ended. */
  seen: string;
  /** Why it is a bypass, or undefined. */
  bypass?: string;
}

/** `200+200+403` as `200x2+403`. */
function runs(s: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j < s.length && s[j] === s[i]) j++;
    out.push(j - i > 1 ? `${s[i]}x${j - i}` : `${s[i]}`);
    i = j;
  }
  return out.join("+");
}

function describe(r: RawResult, text: string): string {
  const s = statuses(text);
  if (s.length > 0) {
    const app = s[0] >= 300 && fromApp(text) ? " (app)" : "";
    return runs(s) + app + (r.end === "reset" ? " (reset)" : "");
  }
  return r.end === "idle" || r.end === "timeout" ? "no answer (held)" : `no answer (${r.end})`;
}

/**
 * The verdict on one case through one entry.
 *
 * @param logged whether the case's markers are in the app's access log
 */
function judge(c: HostileCase, r: RawResult, text: string, logged: boolean): Outcome {
  const seen = describe(r, text);
  if (c.logged && !logged) return { seen, bypass: "not in the app's access log: the log oracle is blind" };
  if (!c.logged && logged) {
    return { seen, bypass: "the smuggled request reached the app (marker in its access log)" };
  }
  if (c.never?.test(text)) return { seen, bypass: `the protected answer came back (${c.never.source})` };
  const first = statuses(text)[0];
  if (c.want && !c.want.includes(first)) return { seen, bypass: `want ${c.want.join("/")}, got ${seen}` };
  if (c.refuse && first !== undefined && (!REFUSALS.includes(first) || fromApp(text))) {
    return { seen, bypass: "forwarded to the app instead of refused by the proxy" };
  }
  return { seen };
}

/** The contexts of every case through entry `e` (markers unique per case and entry). */
function contexts(e: Entry): CaseContext[] {
  return CASES.map((c) => ({
    host: e.routeHost,
    mark: `${e.mark}${c.id}`,
    free: `/anything/desync/${e.name}-${c.id}`,
    tokens: {},
  }));
}

/** Sends cases `indexes` (of CASES) through entry `e`. */
function send(lab: HostileLab, e: Entry, ctxs: CaseContext[], indexes: number[]): Promise<RawResult[]> {
  return lab.send(
    e.from,
    indexes.map((i) => ({
      id: CASES[i].id,
      host: e.host,
      port: e.port,
      data: Buffer.from(caseBytes(CASES[i], ctxs[i])).toString("base64"),
    })),
  );
}

/**
 * Sends every case through entry `e`: the token cases last, in their own batch, minted right before
 * it, so that the ±1 s edges of the clock skew are not eaten by the time the other cases take.
 */
async function runEntry(
  lab: HostileLab,
  e: Entry,
  keys: TokenKeys,
): Promise<{ results: RawResult[]; ctxs: CaseContext[] }> {
  const ctxs = contexts(e);
  const all = CASES.map((_, i) => i);
  const first = all.filter((i) => CASES[i].group !== "token");
  const tokenCases = all.filter((i) => CASES[i].group === "token");
  const results: RawResult[] = new Array(CASES.length);
  (await send(lab, e, ctxs, first)).forEach((r, k) => results[first[k]] = r);
  const tokens = await keys.mint();
  for (const i of tokenCases) ctxs[i].tokens = tokens;
  (await send(lab, e, ctxs, tokenCases)).forEach((r, k) => results[tokenCases[k]] = r);
  return { results, ctxs };
}

function cell(s: string): string {
  return s.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function report(table: Map<string, Partial<Record<EntryName, Outcome>>>, entries: EntryName[]): string {
  const lines = [
    `| # | group | case | input | Envoy | ${entries.join(" | ")} |`,
    `| - | ----- | ---- | ----- | ----- | ${entries.map(() => "---").join(" | ")} |`,
  ];
  CASES.forEach((c, i) => {
    const row = table.get(c.id) ?? {};
    const us = entries.map((e) => {
      const o = row[e];
      return o === undefined ? "-" : o.bypass ? `**BYPASS** ${o.seen}` : o.seen;
    });
    lines.push(
      `| ${i + 1} | ${c.group} | ${c.id} | ${cell(c.what)} | ${cell(c.envoy)} | ${
        us.map(cell).join(" | ")
      } |`,
    );
  });
  return lines.join("\n") + "\n";
}

Deno.test(requires(unavailable, {
  name:
    "hostile corpus: smuggling, path, method, token and oversized-head cases through sidecars and gateway",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "hostile-" });
    const keys = await makeTokenKeys();
    let lab: HostileLab | undefined;
    const started = Date.now();
    try {
      lab = await startHostileLab(dir, keys.jwks);
      const upMs = Date.now() - started;
      const runs = await Promise.all(
        lab.entries.map(async (e) => ({ e, ...(await runEntry(lab!, e, keys)) })),
      );
      // A smuggled request may sit in an upstream connection until more bytes come; give the app a moment.
      await new Promise((r) => setTimeout(r, 500));
      const log = await lab.appLog();
      const table = new Map<string, Partial<Record<EntryName, Outcome>>>();
      const bypasses: string[] = [];
      for (const { e, results, ctxs } of runs) {
        CASES.forEach((c, i) => {
          const r = results[i];
          const text = Buffer.from(r.response, "base64").toString("latin1");
          const marked = [ctxs[i].mark, ctxs[i].free].some((m) => log.includes(` ${m} `));
          const o = judge(c, r, text, marked);
          table.set(c.id, { ...table.get(c.id), [e.name]: o });
          if (o.bypass) {
            bypasses.push(`${e.name} ${c.id} (${c.what}): ${o.bypass}; got: ${text.slice(0, 300)}`);
          }
        });
      }
      // Still alive and serving after the corpus.
      const alive = await lab.proxiesAlive();
      for (const [role, ok] of Object.entries(alive)) if (!ok) bypasses.push(`${role}: proxy died`);
      // Enough requests to go through every pooled upstream connection: none may be poisoned.
      const control = CASES.findIndex((c) => c.id === "control-get");
      for (const e of lab.entries) {
        for (const r of await send(lab, e, contexts(e), new Array(AFTER).fill(control))) {
          const got = statuses(Buffer.from(r.response, "base64").toString("latin1"))[0];
          if (got !== 200) bypasses.push(`${e.name}: GET /anything after the corpus: ${got ?? r.end}`);
        }
      }
      const text = report(table, lab.entries.map((e) => e.name));
      const out = Deno.env.get("HOSTILE_REPORT");
      if (out) await Deno.writeTextFile(out, text);
      figure(
        `hostile corpus: ${CASES.length} cases x ${lab.entries.length} entries, lab up ${upMs} ms, ` +
          `total ${Date.now() - started} ms, proxies ${JSON.stringify(alive)}`,
      );
      assert.deepEqual(bypasses, [], `${bypasses.length} bypasses or crashes:\n${bypasses.join("\n")}`);
    } finally {
      if (lab) await labDown(lab.name);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
}));
