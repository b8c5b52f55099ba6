/**
 * The serving pool with real child processes, real grpc-js clients and real TLS: calls reach the
 * handlers registered on the bridge, with the client's address and verified certificate; a killed
 * child ends only its own calls and is replaced; new TLS material reaches new connections.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import * as tls from "node:tls";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { StaticCertificateProvider } from "../../ca/server_credentials.ts";
import { makeCsr } from "../../ca/test_support.ts";
import { startCa, waitFor } from "../../ca/test_support.ts";
import { BridgeServer } from "./bridge.ts";
import { ServingPool } from "./pool.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

const text = {
  serialize: (s: string) => Buffer.from(s),
  deserialize: (b: Buffer) => b.toString(),
};
const SERVICE: grpc.ServiceDefinition = {
  Echo: {
    path: "/test.Echo/Echo",
    requestStream: false,
    responseStream: false,
    requestSerialize: text.serialize,
    requestDeserialize: text.deserialize,
    responseSerialize: text.serialize,
    responseDeserialize: text.deserialize,
  },
  Chat: {
    path: "/test.Echo/Chat",
    requestStream: true,
    responseStream: true,
    requestSerialize: text.serialize,
    requestDeserialize: text.deserialize,
    responseSerialize: text.serialize,
    responseDeserialize: text.deserialize,
  },
};
const Client = grpc.makeGenericClientConstructor(SERVICE, "Echo");

interface Seen {
  peer: string;
  san?: string;
  cancelled: number;
}

function servers(seen: Seen): { plaintext: BridgeServer; tls: BridgeServer } {
  const impl: grpc.UntypedServiceImplementation = {
    Echo: (call: grpc.ServerUnaryCall<string, string>, cb: grpc.sendUnaryData<string>) => {
      seen.peer = call.getPeer();
      seen.san = call.getAuthContext().sslPeerCertificate?.subjectaltname;
      if (call.request === "fail") return cb({ code: grpc.status.PERMISSION_DENIED, details: "no" });
      if (call.request === "slow") return void setTimeout(() => cb(null, "echo slow"), 400);
      cb(null, `echo ${call.request}`);
    },
    Chat: (call: grpc.ServerDuplexStream<string, string>) => {
      call.on("data", (m: string) => call.write(`re ${m}`));
      call.on("end", () => call.end());
      call.on("cancelled", () => seen.cancelled++);
    },
  };
  const s = { plaintext: new BridgeServer(), tls: new BridgeServer() };
  s.plaintext.addService(SERVICE, impl);
  s.tls.addService(SERVICE, impl);
  return s;
}

const OPTIONS = {
  maxStreams: 100,
  maxRecvMessageBytes: 1 << 20,
  keepaliveIntervalMs: 30_000,
  keepaliveTimeoutMs: 10_000,
};

function echo(client: grpc.Client, request: string): Promise<string> {
  return new Promise((resolve, reject) =>
    (client as unknown as Record<string, CallableFunction>).Echo(
      request,
      (e: grpc.ServiceError | null, r: string) => e ? reject(e) : resolve(r),
    )
  );
}

Deno.test({
  name: "pool: unary and streaming calls through a child; a killed child ends its calls and is replaced",
  async fn() {
    const seen: Seen = { peer: "", cancelled: 0 };
    const deaths: string[] = [];
    const pool = new ServingPool({
      children: 2,
      listen: { plaintext: { hostname: "127.0.0.1", port: 0 } },
      servers: servers(seen),
      serverOptions: OPTIONS,
      onChildDeath: (_pid, how) => deaths.push(how),
    });
    const ports = await pool.start();
    const client = new Client(`127.0.0.1:${ports.plaintext}`, grpc.credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
    });
    try {
      assert.equal(await echo(client, "a"), "echo a");
      assert.match(seen.peer, /^127\.0\.0\.1:\d+$/);
      await assert.rejects(() => echo(client, "fail"), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.PERMISSION_DENIED);
        assert.equal(e.details, "no");
        return true;
      });
      const chat = (client as unknown as Record<string, CallableFunction>).Chat() as grpc.ClientDuplexStream<
        string,
        string
      >;
      const got: string[] = [];
      let status: grpc.StatusObject | undefined;
      chat.on("data", (m: string) => got.push(m));
      chat.on("status", (s: grpc.StatusObject) => (status = s));
      chat.on("error", () => {});
      chat.write("x");
      await waitFor(() => got.length === 1, 5000, "the streamed answer");
      assert.deepEqual(got, ["re x"]);
      const holder = pool.status().find((c) => c.calls > 0);
      assert.ok(holder, JSON.stringify(pool.status()));
      Deno.kill(holder.pid, "SIGABRT");
      await waitFor(
        () => status !== undefined && seen.cancelled === 1,
        5000,
        "both ends to see the child go",
      );
      assert.equal(status!.code, grpc.status.UNAVAILABLE);
      assert.deepEqual(deaths, ["signal SIGABRT"]);
      // The other child serves at once; the replacement comes up.
      assert.equal(await echo(client, "b"), "echo b");
      await waitFor(() => pool.status().filter((c) => c.ready).length === 2, 20_000, "a replacement");
      assert.ok(!pool.status().some((c) => c.pid === holder.pid));
    } finally {
      client.close();
      await pool.stop(0);
    }
    assert.equal(pool.status().length, 0, "the children exit when the pool stops");
  },
});

Deno.test({
  name:
    "pool: TLS ends in the child, the verified client certificate reaches the handler, new material is used",
  async fn() {
    const dir = await Deno.makeTempDir();
    const ca = await startCa(join(dir, "ca"));
    const seen: Seen = { peer: "", cancelled: 0 };
    const issue = () =>
      ca.issueServingCertificate({ dnsNames: ["meshd.mesh-system.svc"], ipAddresses: ["127.0.0.1"] });
    const first = await issue();
    const provider = new StaticCertificateProvider({ ...first, trustBundlePem: ca.trustBundlePem });
    const pool = new ServingPool({
      children: 1,
      listen: { tls: { hostname: "127.0.0.1", port: 0 } },
      servers: servers(seen),
      serverOptions: OPTIONS,
      certificates: provider,
    });
    const ports = await pool.start();
    const csr = await makeCsr();
    const chain = await ca.sign({ csrPem: csr.csrPem, namespace: "foo", serviceAccount: "sa" });
    const client = new Client(
      `127.0.0.1:${ports.tls}`,
      grpc.credentials.createSsl(
        Buffer.from(ca.trustBundlePem),
        Buffer.from(csr.privateKeyPem),
        Buffer.from(chain.join("")),
      ),
      { "grpc.ssl_target_name_override": "meshd.mesh-system.svc", "grpc.use_local_subchannel_pool": 1 },
    );
    const HANDSHAKE = "a TLS handshake with the serving pool";
    const servingSerial = () =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect({
          host: "127.0.0.1",
          port: ports.tls,
          ca: ca.trustBundlePem,
          servername: "meshd.mesh-system.svc",
        });
        s.on("secureConnect", () => {
          resolve(s.getPeerCertificate().serialNumber);
          s.destroy();
        });
        s.on("error", reject);
      });
    try {
      assert.equal(await echo(client, "t"), "echo t");
      assert.equal(seen.san, "URI:spiffe://cluster.local/ns/foo/sa/sa");
      const before = await within(servingSerial(), 5000, HANDSHAKE);
      const second = await issue();
      provider.update({ ...second, trustBundlePem: ca.trustBundlePem });
      let after = before;
      const deadline = Date.now() + 5000;
      while (after === before && Date.now() < deadline) {
        after = await within(servingSerial(), 5000, HANDSHAKE);
      }
      assert.notEqual(after, before, "a new connection must get the renewed certificate");
      assert.equal(await echo(client, "still"), "echo still", "the established connection keeps working");
    } finally {
      client.close();
      await pool.stop(0);
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "pool: stop waits up to its grace for unary calls in flight (a CSR), then ends the children",
  // Off (measured with --trace-leaks): the refused call after the stop puts grpc-js's subchannel in
  // reconnect backoff, and client.close() does not clear that timer (@grpc/grpc-js 1.14.7
  // backoff-timeout.js, Subchannel.startBackoff; Deno counts timers both ways). A local subchannel pool
  // does not help. The pool itself leaks nothing here: the other two tests run sanitized.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const pool = new ServingPool({
      children: 1,
      listen: { plaintext: { hostname: "127.0.0.1", port: 0 } },
      servers: servers({ peer: "", cancelled: 0 }),
      serverOptions: OPTIONS,
    });
    const ports = await pool.start();
    const client = new Client(`127.0.0.1:${ports.plaintext}`, grpc.credentials.createInsecure());
    try {
      const answer = echo(client, "slow");
      // A fixed sleep let the stop win the race on busy cores: wait until the child carries the call.
      for (const until = Date.now() + 10_000; !pool.status().some((c) => c.calls > 0);) {
        if (Date.now() > until) throw new Error("the call never reached a child");
        await new Promise((r) => setTimeout(r, 10));
      }
      const started = performance.now();
      await pool.stop(20_000);
      const took = performance.now() - started;
      assert.equal(await answer, "echo slow", "the call in flight is answered");
      assert.ok(took < 10_000, `stop waited for the call, not the whole grace: ${took.toFixed(0)} ms`);
      await assert.rejects(() => echo(client, "after"), "nothing is accepted after the stop");
    } finally {
      client.close();
    }
  },
});
