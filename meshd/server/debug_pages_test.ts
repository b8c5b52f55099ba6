import assert from "node:assert/strict";
import { TYPE_URLS } from "../xds/generators.ts";
import { DebugPages } from "./debug_pages.ts";
import { withDiscovery } from "./test_support.ts";

const q = (s = "") => new URLSearchParams(s);

Deno.test("debug pages: index, unknown page, rootCert only with a CA, namespace limits on proxy pages", async () => {
  await withDiscovery(async ({ server, connect }) => {
    const p = connect("foo", "httpbin-1");
    await p.until(() => p.held.get(TYPE_URLS.workload)?.has("foo/httpbin-1") ?? false, 3000);
    const pages = new DebugPages(server);
    assert.deepEqual(JSON.parse(pages.render({ name: "", query: q() }).body), [
      "syncz",
      "configz",
      "registryz",
      "connections",
      "servingz",
      "config_dump",
      "mesh",
      "version",
    ]);
    assert.deepEqual(JSON.parse(pages.render({ name: "servingz", query: q() }).body), {
      children: [],
      deaths: 0,
    });
    const unknown = pages.render({ name: "rootCert", query: q() });
    assert.equal(unknown.status, 404, "no rootCert page without a CA");
    assert.match(JSON.parse(unknown.body).error, /no debug page "rootCert"; pages: syncz, configz/);
    const withCa = new DebugPages(server, { rootCertPem: () => "PEM" });
    assert.deepEqual(withCa.render({ name: "rootCert", query: q() }), {
      status: 200,
      contentType: "application/x-pem-file",
      body: "PEM",
    });

    const syncz = (namespace?: string) =>
      JSON.parse(pages.render({ name: "syncz", query: q(), namespace }).body).map((s: { workload: string }) =>
        s.workload
      );
    assert.deepEqual(syncz(), ["foo/httpbin-1"]);
    assert.deepEqual(syncz("foo"), ["foo/httpbin-1"]);
    assert.deepEqual(syncz("bar"), []);
    const dump = (namespace?: string) =>
      pages.render({ name: "config_dump", query: q("proxyID=foo/httpbin-1"), namespace });
    assert.equal(dump("foo").status, 200);
    assert.equal(dump("bar").status, 404);
    assert.match(JSON.parse(dump("bar").body).error, /not connected in namespace bar/);
    assert.equal(pages.render({ name: "config_dump", query: q() }).status, 400);
  });
});
