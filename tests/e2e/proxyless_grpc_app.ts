/**
 * A proxyless gRPC program for the tests: `server <port>` serves echo.Echo/Say with grpc-js-xds's
 * XdsServer, `client <xds target>` makes one call and prints `OK <reply>` or `ERR <code> <details>`.
 * Both read GRPC_XDS_BOOTSTRAP (written by `proxy --proxyless`) and use xDS credentials (the
 * certificates of the bootstrap's `default` provider when meshd's config asks for mutual TLS).
 * `client-foreign <host:port> <ca> [<cert> <key>]` calls without xDS, over TLS with the given files
 * (no client certificate when cert and key are absent). `client-plain <host:port>` calls without xDS in
 * plain text.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as xds from "@grpc/grpc-js-xds";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";

const ident = (b: Buffer): Buffer => b;
const SERVICE: grpc.ServiceDefinition = {
  Say: {
    path: "/echo.Echo/Say",
    requestStream: false,
    responseStream: false,
    requestSerialize: ident,
    requestDeserialize: ident,
    responseSerialize: ident,
    responseDeserialize: ident,
  },
};
const Client = grpc.makeGenericClientConstructor(SERVICE, "Echo");

function call(client: grpc.Client): void {
  const deadline = Date.now() + 8000;
  (client as unknown as Record<string, (...a: unknown[]) => void>).Say(
    Buffer.from("hello"),
    { deadline },
    (err: grpc.ServiceError | null, reply?: Buffer) => {
      if (err) console.log(`ERR ${grpc.status[err.code]} ${err.details}`);
      else console.log(`OK ${reply!.toString()}`);
      client.close();
      Deno.exit(0);
    },
  );
}

const [mode, arg, ...rest] = Deno.args;
if (mode === "server") {
  xds.register();
  const server = new xds.XdsServer();
  server.addService(SERVICE, {
    Say: (c: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      cb(null, Buffer.from(`echo ${c.request.toString()}`));
    },
  });
  server.bindAsync(
    `0.0.0.0:${arg}`,
    new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure()),
    (err) => {
      if (err) {
        console.log(`ERR bind ${err.message}`);
        Deno.exit(1);
      }
      console.log("SERVING");
    },
  );
} else if (mode === "client") {
  xds.register();
  call(new Client(arg, new xds.XdsChannelCredentials(grpc.credentials.createInsecure())));
} else if (mode === "client-foreign") {
  const [ca, cert, key] = rest.map((f) => readFileSync(f));
  // SPIFFE certificates carry no DNS name: the name check is off, the chain check stays.
  const creds = grpc.credentials.createSsl(ca, key ?? null, cert ?? null, {
    checkServerIdentity: () => undefined,
  });
  call(new Client(arg, creds, { "grpc.ssl_target_name_override": "echo.echo.svc" }));
} else if (mode === "client-plain") {
  call(new Client(arg, grpc.credentials.createInsecure()));
} else {
  console.log(`ERR usage ${mode}`);
  Deno.exit(2);
}
