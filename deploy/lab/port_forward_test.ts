/**
 * Port forwarding into a network namespace: the port specs (pure), and a real forward into a fresh
 * namespace (root) to a real HTTP server there, a refused dial, and that closing ends the relay.
 */
import assert from "node:assert/strict";
import { labUnavailable, netnsPids, run } from "./host.ts";
import { netnsServer } from "./netns_server_test_support.ts";
import { openPortForward, parsePortSpec } from "../../shared/internal/lab/port_forward.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";

Deno.test("parsePortSpec: kubectl's forms, and errors naming the spec", () => {
  assert.deepEqual(parsePortSpec("8080"), { local: 8080, remote: 8080 });
  assert.deepEqual(parsePortSpec("18080:8080"), { local: 18080, remote: 8080 });
  assert.deepEqual(parsePortSpec(":15000"), { local: 0, remote: 15000 });
  assert.throws(() => parsePortSpec("1:2:3"), /port "1:2:3": expected \[<local>:\]<remote>/);
  assert.throws(() => parsePortSpec("http"), /port "http": "http" is not a port number \(1-65535\)/);
  assert.throws(() => parsePortSpec("80:0"), /"0" is not a port number/);
  assert.throws(() => parsePortSpec("70000:80"), /"70000" is not a port number \(0-65535\)/);
});

const unavailable = labUnavailable();

Deno.test(requires(unavailable, {
  name: "openPortForward: host 127.0.0.1 to a server on 127.0.0.1 inside a namespace; refused; closed",
  async fn() {
    const netns = `pf${Deno.pid}`;
    const dir = await Deno.makeTempDir();
    const content = crypto.getRandomValues(new Uint8Array(65536)).map((b, i) => b ^ i);
    const big = new Uint8Array(3_000_000).map((_, i) => content[i % content.length] ^ (i >> 16));
    await Deno.writeFile(`${dir}/big.bin`, big);
    const server = await netnsServer(netns, 8099, dir);
    try {
      // Not reachable from the host's namespace: the forward is what makes it so.
      const direct = await run("curl", [
        "-s",
        "-o",
        "/dev/null",
        "--max-time",
        "2",
        "http://127.0.0.1:8099/",
      ]);
      assert.notEqual(direct.code, 0);

      const errors: string[] = [];
      let connections = 0;
      const f = await openPortForward(netns, "127.0.0.1:8099", {
        onConnection: () => connections++,
        onError: (l) => errors.push(l),
      });
      assert.match(f.localAddress, /^127\.0\.0\.1:\d+$/);
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`http://${f.localAddress}/`);
        assert.equal(res.status, 200);
        assert.match(await res.text(), /Directory listing/);
      }
      // A large answer arrives whole (the relay passes every byte and the end of stream).
      const got = new Uint8Array(await (await fetch(`http://${f.localAddress}/big.bin`)).arrayBuffer());
      assert.equal(got.length, big.length);
      assert.ok(got.every((b, i) => b === big[i]));
      assert.ok(connections >= 1);
      assert.equal(errors.length, 0, errors.join("; "));

      const refused = await openPortForward(netns, "127.0.0.1:1", { onError: (l) => errors.push(l) });
      await assert.rejects(fetch(`http://${refused.localAddress}/`));
      for (let i = 0; i < 50 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.match(errors[0], new RegExp(`^${netns}: cannot connect to 127\\.0\\.0\\.1:1: .*refused`));

      const before = (await netnsPids(netns)).length;
      assert.equal(before, 3); // the server and two relays
      await Promise.all([f.close(), refused.close()]);
      assert.deepEqual(await netnsPids(netns), [server.pid]);
      await assert.rejects(fetch(`http://${f.localAddress}/`));
    } finally {
      await server.remove();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
