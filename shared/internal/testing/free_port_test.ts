import assert from "node:assert/strict";
import { freePort } from "./free_port.ts";

Deno.test("freePort: below the ephemeral range, bindable, never the same port twice", () => {
  const [low] = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/);
  const seen = new Set<number>();
  for (let i = 0; i < 50; i++) {
    const port = freePort();
    assert.ok(port >= 20000 && port < Number(low), `${port} below ${low}`);
    assert.ok(!seen.has(port), `${port} twice`);
    seen.add(port);
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  }
});
