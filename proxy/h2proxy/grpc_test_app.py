"""A gRPC server and client (Debian's python3-grpcio) for the HTTP/2 tests of the proxy.

No generated code: the methods take and return raw bytes (generic handlers, no serializers).

  server PORT            serves test.Echo on 127.0.0.1:PORT (h2c), prints "listening" when ready
  client TARGET AUTHORITY [--token=T] [--ca=FILE] SCENARIO...
                         calls test.Echo at TARGET with :authority AUTHORITY and prints one JSON
                         object: scenario -> {"code": "OK" | grpc status name, "details": ..., ...};
                         with --ca, over TLS (SNI: AUTHORITY's host) trusting FILE's certificates

Scenarios: unary, server_stream, client_stream, bidi, deadline, large, metadata, trailers, concurrent,
slow_client_stream (a client stream that pauses 5 s between messages, 30 s deadline), route_timeout (Sleep
of 20 s with a 30 s deadline), cancelled (how many Sleep calls the server saw cancelled).
Run it with a clean environment: grpcio reads http_proxy, grpc_proxy and GRPC_* variables.
"""

import json
import sys
import threading
import time
from concurrent import futures

import grpc

MAX = 16 * 1024 * 1024
OPTIONS = [("grpc.max_send_message_length", MAX), ("grpc.max_receive_message_length", MAX)]
SERVICE = "test.Echo"


def unary(request, context):
    context.set_trailing_metadata((("x-trailer", "unary-done"),))
    return request


def server_stream(request, context):
    for i in range(int(request.decode())):
        yield b"message-%d" % i


def client_stream(request_iterator, context):
    count = 0
    size = 0
    for message in request_iterator:
        count += 1
        size += len(message)
    return json.dumps({"count": count, "bytes": size}).encode()


def bidi(request_iterator, context):
    for message in request_iterator:
        yield b"echo:" + message


CANCELLED = [0]
CANCELLED_LOCK = threading.Lock()


def wait(milliseconds, context):
    # Until the time passes or the call is cancelled (its deadline, or a reset); counts cancellations.
    end = time.monotonic() + milliseconds / 1000
    while time.monotonic() < end and context.is_active():
        time.sleep(0.01)
    if not context.is_active():
        with CANCELLED_LOCK:
            CANCELLED[0] += 1


def sleep(request, context):
    # Sleeps the asked milliseconds, or until the caller's deadline passes (the app enforces it).
    wait(int(request.decode()), context)
    return b"slept"


def cancelled(request, context):
    with CANCELLED_LOCK:
        return b"%d" % CANCELLED[0]


def metadata(request, context):
    return json.dumps({k: v for k, v in context.invocation_metadata()}).encode()


def serve(port):
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
        "Sleep": grpc.unary_unary_rpc_method_handler(sleep),
        "Metadata": grpc.unary_unary_rpc_method_handler(metadata),
        "Cancelled": grpc.unary_unary_rpc_method_handler(cancelled),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=OPTIONS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_insecure_port("127.0.0.1:%d" % port)
    server.start()
    print("listening", flush=True)
    server.wait_for_termination()


def outcome(fn):
    try:
        result = fn()
        result.setdefault("code", "OK")
        return result
    except grpc.RpcError as e:
        return {"code": e.code().name, "details": e.details()}


def run_client(target, authority, scenarios, token, ca):
    options = OPTIONS + [("grpc.default_authority", authority)]
    if ca:
        with open(ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        options.append(("grpc.ssl_target_name_override", authority.split(":")[0]))
        channel = grpc.secure_channel(target, credentials, options=options)
    else:
        channel = grpc.insecure_channel(target, options=options)
    meta = (("authorization", "Bearer " + token),) if token else None

    def method(kind, name):
        return getattr(channel, kind)("/%s/%s" % (SERVICE, name))

    def do_unary():
        return {"reply": method("unary_unary", "Unary")(b"hello", timeout=10, metadata=meta).decode()}

    def do_server_stream():
        replies = list(method("unary_stream", "ServerStream")(b"100", timeout=10, metadata=meta))
        return {"count": len(replies), "last": replies[-1].decode()}

    def do_client_stream():
        reply = method("stream_unary", "ClientStream")((b"x" * 1000 for _ in range(50)), timeout=10, metadata=meta)
        return json.loads(reply)

    def do_bidi():
        # Ping-pong: each request is sent only after the previous reply came back through both proxies.
        ready = threading.Semaphore(1)
        got = []

        def requests():
            for i in range(20):
                ready.acquire()
                yield b"%d" % i

        for reply in method("stream_stream", "Bidi")(requests(), timeout=10, metadata=meta):
            got.append(reply.decode())
            ready.release()
        return {"count": len(got), "last": got[-1]}

    def do_deadline():
        start = time.monotonic()
        try:
            method("unary_unary", "Sleep")(b"5000", timeout=0.5, metadata=meta)
            return {"code": "OK", "seconds": time.monotonic() - start}
        except grpc.RpcError as e:
            return {"code": e.code().name, "details": e.details(), "seconds": time.monotonic() - start}

    def do_large():
        payload = bytes(range(256)) * (4 * 1024 * 1024 // 256 + 1)
        reply = method("unary_unary", "Unary")(payload, timeout=30, metadata=meta)
        return {"bytes": len(reply), "same": reply == payload}

    def do_metadata():
        return {"seen": json.loads(method("unary_unary", "Metadata")(b"", timeout=10, metadata=meta))}

    def do_trailers():
        _, call = method("unary_unary", "Unary").with_call(b"t", timeout=10, metadata=meta)
        return {"trailers": dict(call.trailing_metadata())}

    def do_concurrent():
        pool = futures.ThreadPoolExecutor(max_workers=50)
        calls = [pool.submit(method("unary_unary", "Sleep"), b"200", timeout=10, metadata=meta) for _ in range(50)]
        return {"replies": sum(1 for c in calls if c.result() == b"slept")}

    def do_slow_client_stream():
        def requests():
            for _ in range(3):
                yield b"x"
                time.sleep(5)

        return json.loads(method("stream_unary", "ClientStream")(requests(), timeout=30, metadata=meta))

    def do_route_timeout():
        start = time.monotonic()
        try:
            reply = method("unary_unary", "Sleep")(b"20000", timeout=30, metadata=meta)
            return {"reply": reply.decode(), "seconds": time.monotonic() - start}
        except grpc.RpcError as e:
            return {"code": e.code().name, "details": e.details(), "seconds": time.monotonic() - start}

    def do_cancelled():
        return {"count": int(method("unary_unary", "Cancelled")(b"", timeout=10, metadata=meta))}

    table = {
        "unary": do_unary,
        "server_stream": do_server_stream,
        "client_stream": do_client_stream,
        "bidi": do_bidi,
        "deadline": do_deadline,
        "large": do_large,
        "metadata": do_metadata,
        "trailers": do_trailers,
        "concurrent": do_concurrent,
        "slow_client_stream": do_slow_client_stream,
        "route_timeout": do_route_timeout,
        "cancelled": do_cancelled,
    }
    print(json.dumps({s: outcome(table[s]) for s in scenarios}), flush=True)
    channel.close()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]))
    else:
        args = sys.argv[4:]
        flags = {"--token": "", "--ca": ""}
        while args and args[0].split("=")[0] in flags:
            name, value = args[0].split("=", 1)
            flags[name] = value
            args = args[1:]
        run_client(sys.argv[2], sys.argv[3], args, flags["--token"], flags["--ca"])
