/**
 * The relay under test, in its own process: `deno run -A relay_process.ts <listenPort> <upstreamPort>`
 * accepts on 127.0.0.1:<listenPort> and relays each connection to 127.0.0.1:<upstreamPort> with
 * proxy/tcp/relay.ts. Prints "ready" on stdout once listening.
 *
 * @module
 */
import net from "node:net";
import { relay } from "../../../proxy/tcp/relay.ts";

const [listenPort, upstreamPort] = Deno.args.map(Number);
const server = net.createServer({ allowHalfOpen: true }, (down) => {
  down.setNoDelay(true);
  down.pause();
  const up = net.connect({ host: "127.0.0.1", port: upstreamPort, allowHalfOpen: true });
  up.setNoDelay(true);
  up.once("connect", () => void relay(down, up));
  up.once("error", () => down.destroy());
});
server.listen(listenPort, "127.0.0.1", () => console.log("ready"));
