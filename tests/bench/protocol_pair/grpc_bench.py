"""gRPC unary server and fixed-rate load client for tests/bench/protocol_pair (python3-grpcio).

  grpc_bench.py serve <port>
      An h2c gRPC server on 127.0.0.1:<port>: /bench.Echo/Unary answers the request bytes.
      Prints "ready" when it listens.
  grpc_bench.py load <host:port> <authority> <rate> <seconds> <payload bytes>
      Open-loop load: call i is sent at start + i/rate (not when call i-1 ended, so a slow target
      cannot lower the rate and hide its latency), for <seconds>. Each latency is measured from the
      call's scheduled time to its answer. Prints one JSON line: sent, ok, errors by status code,
      achieved rate, p50/p90/p99/max in ms, and how late the client itself sent (send_lag_p99_ms;
      when this is not small next to p50, the client was the bottleneck, not the target).

Messages are raw bytes (no protobuf), so no generated code is needed. Both sides use grpcio's C core.
"""
import asyncio
import json
import sys
import time
from concurrent import futures

import grpc

METHOD = "/bench.Echo/Unary"


def serve(port: int) -> None:
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Unary": grpc.unary_unary_rpc_method_handler(lambda req, ctx: req)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


def percentile(sorted_ms: list, p: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(p / 100 * len(sorted_ms)))]


async def load(target: str, authority: str, rate: float, seconds: float, size: int) -> dict:
    # grpcio would follow http_proxy/grpc_proxy from the environment: the bench measures direct paths.
    options = [("grpc.enable_http_proxy", 0)] + ([("grpc.default_authority", authority)] if authority else [])
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        call = channel.unary_unary(METHOD)
        payload = b"x" * size
        await call(payload, timeout=5)  # warm: the connection is up before the clock starts
        latencies, lags, errors = [], [], {}
        loop = asyncio.get_running_loop()
        start = loop.time()
        n = int(rate * seconds)

        async def one(scheduled: float) -> None:
            lags.append((loop.time() - scheduled) * 1000)
            try:
                reply = await call(payload, timeout=5)
                if reply != payload:
                    errors["WRONG_REPLY"] = errors.get("WRONG_REPLY", 0) + 1
                    return
                latencies.append((loop.time() - scheduled) * 1000)
            except grpc.aio.AioRpcError as e:
                errors[e.code().name] = errors.get(e.code().name, 0) + 1

        tasks = []
        for i in range(n):
            scheduled = start + i / rate
            delay = scheduled - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one(scheduled)))
        await asyncio.gather(*tasks)
        elapsed = loop.time() - start
    latencies.sort()
    lags.sort()
    return {
        "sent": n,
        "ok": len(latencies),
        "errors": errors,
        "rate": round(n / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50), 3),
        "p90_ms": round(percentile(latencies, 90), 3),
        "p99_ms": round(percentile(latencies, 99), 3),
        "max_ms": round(latencies[-1], 3) if latencies else None,
        "send_lag_p99_ms": round(percentile(lags, 99), 3),
    }


def main() -> None:
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif sys.argv[1] == "load":
        target, authority, rate, seconds, size = sys.argv[2:7]
        t0 = time.monotonic()
        result = asyncio.run(load(target, authority, float(rate), float(seconds), int(size)))
        result["wall_s"] = round(time.monotonic() - t0, 2)
        print(json.dumps(result), flush=True)
    else:
        sys.exit(f"usage: {sys.argv[0]} serve <port> | load <host:port> <authority> <rate> <seconds> <bytes>")


if __name__ == "__main__":
    main()
