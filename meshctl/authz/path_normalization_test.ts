/**
 * The option `authz explain` normalizes with: from a config dump's listeners (the inbound listener
 * of the port, else any), from meshd's /debug/mesh, else the default; bad values named by field.
 */
import assert from "node:assert/strict";
import { DUMP_TYPES } from "../proxy_config/sections.ts";
import type { PathNormalization } from "../../shared/mod.ts";
import {
  normalizationFromDump,
  normalizationFromMeshd,
  normalizationText,
  normalizeWith,
} from "./path_normalization.ts";

/** A listener as proxy/admin/config_dump.ts renders it. */
function dumpListener(
  name: string,
  port: number,
  direction: "INBOUND" | "OUTBOUND",
  option: unknown,
): unknown {
  return {
    name,
    active_state: {
      listener: {
        name,
        address: { socket_address: { address: "10.1.0.2", port_value: port } },
        traffic_direction: direction,
        ...(option === undefined ? {} : { http_connection_manager: { path_normalization: option } }),
      },
    },
  };
}

const dump = (...listeners: unknown[]) => ({
  configs: [{ "@type": DUMP_TYPES.listeners, dynamic_listeners: listeners }],
});

Deno.test("normalizationFromDump: the port's inbound listener, else an inbound one, else any, else the default", () => {
  const cases: {
    name: string;
    listeners: unknown[];
    port?: number;
    option: PathNormalization;
    from: RegExp;
  }[] = [
    {
      name: "the port's inbound listener",
      listeners: [
        dumpListener("inbound|a_80", 80, "INBOUND", "MERGE_SLASHES"),
        dumpListener("inbound|a_8000", 8000, "INBOUND", "BASE"),
      ],
      port: 8000,
      option: "BASE",
      from: /^the config dump's listener inbound\|a_8000$/,
    },
    {
      name: "another port: the first inbound listener",
      listeners: [
        dumpListener("outbound|x_15001", 15001, "OUTBOUND", "DECODE_AND_MERGE_SLASHES"),
        dumpListener("inbound|a_80", 80, "INBOUND", "NONE"),
      ],
      port: 9,
      option: "NONE",
      from: /listener inbound\|a_80$/,
    },
    {
      name: "a gateway: its outbound listener",
      listeners: [dumpListener("0.0.0.0_8080", 8080, "OUTBOUND", "MERGE_SLASHES")],
      option: "MERGE_SLASHES",
      from: /listener 0\.0\.0\.0_8080$/,
    },
    {
      name: "a dump from before the field: the default",
      listeners: [dumpListener("inbound|a_80", 80, "INBOUND", undefined)],
      port: 80,
      option: "DECODE_AND_MERGE_SLASHES",
      from: /^default: the config dump's listeners show no path_normalization$/,
    },
  ];
  for (const c of cases) {
    const n = normalizationFromDump(dump(...c.listeners), c.port, "d.json");
    assert.equal(n.option, c.option, c.name);
    assert.match(n.from, c.from, c.name);
  }
  assert.equal(normalizationFromDump({ configs: [] }, 80, "d.json").option, "DECODE_AND_MERGE_SLASHES");
  assert.throws(
    () => normalizationFromDump(dump(dumpListener("inbound|a_80", 80, "INBOUND", "SLASHES")), 80, "d.json"),
    /^Error: d\.json: listeners: dynamic_listeners\[0\]\.active_state\.listener\.http_connection_manager\.path_normalization: "SLASHES" is not one of NONE, BASE, MERGE_SLASHES, DECODE_AND_MERGE_SLASHES$/,
  );
});

Deno.test("normalizationFromMeshd: meshd's pathNormalization, the default from an older meshd, bad values named", () => {
  assert.deepEqual(normalizationFromMeshd("BASE", "meshd at h:1"), {
    option: "BASE",
    from: "meshd's mesh config",
  });
  assert.equal(normalizationFromMeshd(undefined, "meshd at h:1").option, "DECODE_AND_MERGE_SLASHES");
  assert.throws(
    () => normalizationFromMeshd(3, "meshd at h:1"),
    /meshd at h:1: \/debug\/mesh pathNormalization: 3/,
  );
});

Deno.test("normalizeWith: the path each option makes of a target, and the output line", () => {
  const targets: Record<string, Record<PathNormalization, string>> = {
    "//headers?x=1": {
      NONE: "//headers",
      BASE: "//headers",
      MERGE_SLASHES: "/headers",
      DECODE_AND_MERGE_SLASHES: "/headers",
    },
    "/%2Fheaders": {
      NONE: "/%2Fheaders",
      BASE: "/%2Fheaders",
      MERGE_SLASHES: "/%2Fheaders",
      DECODE_AND_MERGE_SLASHES: "/headers",
    },
    "/a/../headers": {
      NONE: "/a/../headers",
      BASE: "/headers",
      MERGE_SLASHES: "/headers",
      DECODE_AND_MERGE_SLASHES: "/headers",
    },
  };
  for (const [target, byOption] of Object.entries(targets)) {
    for (const [option, path] of Object.entries(byOption)) {
      assert.equal(
        normalizeWith(target, { option: option as PathNormalization, from: "x" }).path,
        path,
        target,
      );
    }
  }
  assert.throws(
    () => normalizeWith("/a%00", { option: "NONE", from: "x" }),
    /^Error: --path: the proxy answers 400 before authorization: the path contains %00$/,
  );
  assert.equal(
    normalizationText({ option: "BASE", from: "meshd's mesh config", path: "//headers" }),
    "path normalization: BASE (from meshd's mesh config); path matched as //headers\n",
  );
  assert.equal(
    normalizationText({
      option: "DECODE_AND_MERGE_SLASHES",
      from: "default: policy files carry no mesh config",
    }),
    "path normalization: DECODE_AND_MERGE_SLASHES (default: policy files carry no mesh config)\n",
  );
});
