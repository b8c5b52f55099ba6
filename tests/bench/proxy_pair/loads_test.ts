/** Parsers of wrk's and hey's output (pure; samples of their real output). */
import assert from "node:assert/strict";
import { parseHey, parseWrk } from "./loads.ts";

const WRK = `Running 2s test @ http://127.0.0.1:8080/
  2 threads and 50 connections
  Latency Distribution
     50%    6.07ms
     75%    8.10ms
     90%   12.00ms
     99%   73.49ms
  14773 requests in 2.02s, 1.65MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 3
Requests/sec:   7313.12
Transfer/sec:    817.00KB
`;

const HEY = `Summary:
  Requests/sec:\t1005.2

Latency distribution:
  10%% in 0.0011 secs
  50%% in 0.0028 secs
  90%% in 0.0042 secs
  99%% in 0.0087 secs

Status code distribution:
  [200]\t2016 responses
  [502]\t4 responses

Error distribution:
  [3]\tPost "http://127.0.0.1:1/": dial tcp: connection refused
`;

Deno.test("proxy_pair loads: wrk's rate, requests, percentiles and errors", () => {
  assert.deepEqual(parseWrk(WRK), { rps: 7313, requests: 14773, p50_ms: 6.07, p99_ms: 73.49, errors: 6 });
  assert.equal(parseWrk(WRK.replace("     99%   73.49ms", "     99%    1.20s")).p99_ms, 1200);
});

Deno.test("proxy_pair loads: hey's rate, percentiles, answers and errors", () => {
  assert.deepEqual(parseHey(HEY), {
    rps: 1005,
    p50_ms: 2.8,
    p90_ms: 4.2,
    p99_ms: 8.7,
    ok: 2016,
    non200: 4,
    errors: 3,
  });
});
