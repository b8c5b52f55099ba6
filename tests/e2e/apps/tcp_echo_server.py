"""A stand-in for Istio's samples/tcp-echo server (docker.io/istio/tcp-echo-server): listens on each
port given and answers every line it reads with "<prefix> <line>"; closes when the client does.

  tcp_echo_server.py <prefix> <port>... (binds $BIND_IP, default 0.0.0.0)
"""
import asyncio
import os
import sys


async def main(prefix: str, ports: list) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(prefix.encode() + b" " + line)
                await writer.drain()
        finally:
            writer.close()

    host = os.environ.get("BIND_IP", "0.0.0.0")
    servers = [await asyncio.start_server(handle, host, p) for p in ports]
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], [int(p) for p in sys.argv[2:]]))
