import assert from "node:assert/strict";
import { parseHey } from "./meshd_failover_support.ts";

Deno.test("parseHey: statuses and errors of hey's summary", () => {
  const text = `
Summary:
  Total:	10.0012 secs

Status code distribution:
  [200]	495 responses
  [503]	2 responses

Error distribution:
  [3]	Get "http://127.0.0.1:15001/get": EOF
  [1]	Get "http://127.0.0.1:15001/get": read: connection reset by peer
`;
  const r = parseHey(text);
  assert.deepEqual(r.statuses, { "200": 495, "503": 2 });
  assert.equal(r.errors, 4);
  assert.equal(r.sent, 501);
  assert.equal(r.errorLines.length, 2);
  assert.deepEqual(parseHey("Status code distribution:\n  [200]\t7 responses\n"), {
    statuses: { "200": 7 },
    errors: 0,
    sent: 7,
    errorLines: [],
  });
});
