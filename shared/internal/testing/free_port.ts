/**
 * Test support that several programs' tests use (meshctl's and the proxy's): a free TCP port.
 *
 * @module
 */

/** Linux's default ephemeral range (net.ipv4.ip_local_port_range), when /proc cannot be read. */
const DEFAULT_EPHEMERAL_LOW = 32768;
/** The lowest port handed out: above the registered services tests might meet on a Debian machine. */
const LOW = 20000;

const handedOut = new Set<number>();

function ephemeralLow(): number {
  try {
    const [low] = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/);
    const n = Number(low);
    return Number.isInteger(n) && n > LOW + 1000 ? n : DEFAULT_EPHEMERAL_LOW;
  } catch {
    return DEFAULT_EPHEMERAL_LOW;
  }
}

function bindable(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

/**
 * A free TCP port on 127.0.0.1 (bound and released), below the kernel's ephemeral range: a port from
 * that range (what `port: 0` gives) can be taken by any later `port: 0` bind or outgoing connection
 * before the test binds it (seen in CI: EADDRINUSE on an inbound port a test API server had meanwhile
 * been given). Not the same port twice in one process.
 *
 * @throws Error when no port is free after 200 tries
 */
export function freePort(): number {
  const high = ephemeralLow() - 1;
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (high - LOW + 1));
    if (handedOut.has(port) || !bindable(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free TCP port in ${LOW}-${high} after 200 tries`);
}
