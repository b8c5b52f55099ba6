#!/usr/bin/python3
"""A hostile HTTP/2 client for meshd's plain-text ADS port (denoland/deno#36788).

Each connection opens a real ADS stream (Delta, a sidecar's node, the Service type), waits for
meshd's first response, then misbehaves in one of these patterns and closes its socket:

- closed-goaway: half-closes the stream, waits for meshd's trailers (the stream is closed on both
  sides), then GOAWAY with last-stream-id 0: what grpc-js sends when a channel closes (the pattern
  that aborts Deno's nghttp2)
- cancel-goaway: RST_STREAM CANCEL, then GOAWAY with last-stream-id 0 (grpc-js's cancel and close)
- goaway-open: GOAWAY (NO_ERROR, last stream 0) with the stream still open
- goaway-frames: GOAWAY, then a new HEADERS stream, DATA, PING and WINDOW_UPDATE after it
- goaway-repeat: five GOAWAYs with last-stream-ids going up and down and different error codes
- goaway-odd: GOAWAY with last-stream-id 2^31-1, then one naming an even (server) stream, with debug data
- rst-storm: 50 more streams, each reset at once (RST_STREAM CANCEL), then GOAWAY
- goaway-linger: GOAWAY, then keeps reading until meshd closes or 300 ms pass

Frames after the first GOAWAY are written by hand (h2's state machine would refuse them); headers
are encoded with the connection's own HPACK encoder so that meshd can decode them.

Usage: /usr/bin/python3 tests/bench/hostile_goaway.py HOST PORT N [pattern ...]
Prints one JSON line: connections per pattern, connections that got meshd's response before the
misbehaviour ("served"), and those refused or reset before it ("refused").
"""
import json
import socket
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

PATTERNS = [
    "closed-goaway",
    "cancel-goaway",
    "goaway-open",
    "goaway-frames",
    "goaway-repeat",
    "goaway-odd",
    "rst-storm",
    "goaway-linger",
]
PATH = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
TYPE_URL = b"type.googleapis.com/mesh.v1.Service"

GOAWAY, RST_STREAM, PING, WINDOW_UPDATE, HEADERS, DATA = 0x7, 0x3, 0x6, 0x8, 0x1, 0x0


def field(number, payload):
    """A length-delimited protobuf field."""
    out = bytes([number << 3 | 2])
    n = len(payload)
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n]) + payload


def grpc_message(i):
    node = field(1, f"sidecar~10.9.{i // 250 % 250}.{i % 250}~httpbin-1.foo~foo.svc.cluster.local".encode())
    request = field(1, node) + field(2, TYPE_URL) + field(4, b"*")
    return b"\x00" + struct.pack(">I", len(request)) + request


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def goaway(last, code=0, debug=b""):
    return frame(GOAWAY, 0, 0, struct.pack(">II", last & 0x7FFFFFFF, code) + debug)


def request_headers(authority):
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", PATH),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]


def raw_headers(conn, stream, authority, end_stream=False):
    block = conn.encoder.encode(request_headers(authority))
    return frame(HEADERS, 0x4 | (0x1 if end_stream else 0), stream, block)


def read_until_response(sock, conn, deadline, until=(h2.events.ResponseReceived, h2.events.DataReceived)):
    """Reads until meshd sends one of `until` events, or the deadline passes."""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        data = sock.recv(65536)
        if not data:
            return False
        for event in conn.receive_data(data):
            if isinstance(event, until):
                return True
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    return False


def one(host, port, pattern, i):
    """One hostile connection; returns 'served' or 'refused'."""
    authority = f"{host}:{port}"
    sock = socket.create_connection((host, port), timeout=5)
    try:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        conn.send_headers(1, request_headers(authority))
        conn.send_data(1, grpc_message(i))
        sock.sendall(conn.data_to_send())
        served = read_until_response(sock, conn, time.monotonic() + 5)
        if pattern == "closed-goaway":
            conn.end_stream(1)
            sock.sendall(conn.data_to_send())
            read_until_response(sock, conn, time.monotonic() + 2, (h2.events.StreamEnded, h2.events.StreamReset))
            sock.sendall(goaway(0))
        elif pattern == "cancel-goaway":
            sock.sendall(frame(RST_STREAM, 0, 1, struct.pack(">I", 8)) + goaway(0))
        elif pattern == "goaway-open":
            sock.sendall(goaway(0))
        elif pattern == "goaway-frames":
            sock.sendall(goaway(1) + raw_headers(conn, 3, authority) + frame(DATA, 0, 3, grpc_message(i))
                         + frame(PING, 0, 0, b"12345678") + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1000)))
        elif pattern == "goaway-repeat":
            sock.sendall(b"".join(goaway(last, code) for last, code in [(1, 0), (0, 2), (7, 1), (0, 0), (3, 11)]))
        elif pattern == "goaway-odd":
            sock.sendall(goaway(2**31 - 1, 0, b"bye") + goaway(2, 0xFFFFFFFF, b"x" * 200))
        elif pattern == "rst-storm":
            storm = b""
            for s in range(3, 103, 2):
                storm += raw_headers(conn, s, authority) + frame(RST_STREAM, 0, s, struct.pack(">I", 8))
            sock.sendall(storm + goaway(0))
        elif pattern == "goaway-linger":
            sock.sendall(goaway(1))
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                if not sock.recv(65536):
                    break
        return "served" if served else "refused"
    except (OSError, socket.timeout, h2.exceptions.ProtocolError):
        return "refused"
    finally:
        sock.close()


def main():
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    patterns = sys.argv[4:] or PATTERNS
    counts = {p: {"connections": 0, "served": 0, "refused": 0} for p in patterns}
    for i in range(n):
        p = patterns[i % len(patterns)]
        try:
            outcome = one(host, port, p, i)
        except OSError:
            outcome = "refused"
        counts[p]["connections"] += 1
        counts[p][outcome] += 1
        if outcome == "refused":
            time.sleep(0.05)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
