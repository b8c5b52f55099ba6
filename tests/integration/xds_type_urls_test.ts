/**
 * meshd and the proxy agree on the xDS type URLs: the proxy subscribes to exactly the types meshd
 * generates, in the same order (the proxy's own test checks them against shared's resource types).
 */
import assert from "node:assert/strict";
import { TYPE_URLS } from "../../meshd/xds/generators.ts";
import { kindOf, SUBSCRIBED } from "../../proxy/agent/resources.ts";

Deno.test("the proxy subscribes to the six types with meshd's type URLs", () => {
  assert.deepEqual(SUBSCRIBED.map((s) => s.typeUrl), [
    TYPE_URLS.workload,
    TYPE_URLS.service,
    TYPE_URLS.authorization,
    TYPE_URLS.jwtPolicy,
    TYPE_URLS.routeConfiguration,
    TYPE_URLS.tlsCredential,
  ]);
  assert.equal(kindOf(TYPE_URLS.service), "service");
});
