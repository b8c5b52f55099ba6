"""Hostile HTTP/2 peers (Debian's python3-h2) for the proxy's HTTP/2 tests.

  server PORT     an h2c application on 127.0.0.1:PORT that misbehaves by request path:
                  /goaway  GOAWAY (PROTOCOL_ERROR) and close, without a response
                  /rst     RST_STREAM INTERNAL_ERROR on the stream, before a response
                  /midrst  a response head and some body, then RST_STREAM INTERNAL_ERROR
                  /refuse-once  the first time: GOAWAY that refuses the stream (not processed), and close
                  /stall   no response at all (until the stream is reset); also any gRPC method Sleep
                  /stall-body  a gRPC response head and one message (10 bytes), then nothing
                  /resets  200 with the RST_STREAM codes received so far, as a JSON list
                  anything else: 200 "ok"
                  prints "listening" when ready
  rapid-reset HOST:PORT AUTHORITY N
                  a client that opens N streams and resets each at once (CVE-2023-44487), then prints
                  one JSON object: how the connection ended
  stalled-body HOST:PORT AUTHORITY PATH
                  a client that sends a POST's head and 4 body bytes, never the rest, then prints
                  the response as one JSON object ({"status", "body"}, or {"reset": code})
  get HOST:PORT AUTHORITY PATH [CERT KEY CA]
                  one GET with prior knowledge, in mutual TLS without ALPN when given a client
                  certificate, key and CA (files); prints the response as stalled-body does
"""

import json
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.errors
import h2.exceptions
import h2.events


def serve_client(sock):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                try:
                    handle(conn, sock, event)
                except h2.exceptions.StreamClosedError:
                    pass  # the client reset the stream first: nothing to answer
                except ConnectionClosed:
                    return
            sock.sendall(conn.data_to_send())
    except (OSError, h2.exceptions.ProtocolError):
        return
    finally:
        sock.close()


class ConnectionClosed(Exception):
    pass


# Stream ids refused by /refuse-once (it refuses only once per process).
REFUSED = []
# The error codes of the RST_STREAM frames received, over every connection.
RESETS = []


def handle(conn, sock, event):
    """Answers one event by the request path (see the module documentation)."""
    if isinstance(event, h2.events.RequestReceived):
        path = dict(event.headers).get(b":path", b"")
        sid = event.stream_id
        if path == b"/goaway":
            conn.close_connection(error_code=h2.errors.ErrorCodes.PROTOCOL_ERROR)
            sock.sendall(conn.data_to_send())
            raise ConnectionClosed()
        if path == b"/refuse-once" and not REFUSED:
            REFUSED.append(sid)
            conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR, last_stream_id=max(0, sid - 2))
            sock.sendall(conn.data_to_send())
            raise ConnectionClosed()
        if path == b"/stall" or path.endswith(b"/Sleep"):
            return
        if path == b"/stall-body":
            conn.send_headers(sid, [(":status", "200"), ("content-type", "application/grpc")])
            conn.send_data(sid, b"\x00\x00\x00\x00\x05first")
            return
        if path == b"/resets":
            body = json.dumps(RESETS).encode()
            conn.send_headers(sid, [(":status", "200"), ("content-length", str(len(body)))])
            conn.send_data(sid, body, end_stream=True)
            return
        if path == b"/rst":
            conn.reset_stream(sid, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif path == b"/midrst":
            conn.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
            conn.send_data(sid, b"partial ")
            conn.reset_stream(sid, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
        else:
            conn.send_headers(sid, [(":status", "200"), ("content-length", "2")])
            conn.send_data(sid, b"ok", end_stream=True)
    elif isinstance(event, h2.events.StreamReset):
        RESETS.append(int(event.error_code))
    elif isinstance(event, h2.events.DataReceived):
        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)


def server(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    print("listening", flush=True)
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=serve_client, args=(sock,), daemon=True).start()


def rapid_reset(target, authority, count):
    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection()
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    headers = [(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", "/ok")]
    outcome = {"sent": 0, "goaway": None, "closed": False}
    try:
        for _ in range(count):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, headers, end_stream=True)
            conn.reset_stream(sid, error_code=h2.errors.ErrorCodes.CANCEL)
            sock.sendall(conn.data_to_send())
            outcome["sent"] += 1
        while True:
            data = sock.recv(65536)
            if not data:
                outcome["closed"] = True
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ConnectionTerminated):
                    outcome["goaway"] = int(event.error_code)
    except (OSError, h2.exceptions.ProtocolError) as e:
        outcome["closed"] = True
        outcome["error"] = type(e).__name__
    print(json.dumps(outcome), flush=True)


def stalled_body(target, authority, path):
    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=20)
    conn = h2.connection.H2Connection()
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path)])
    conn.send_data(1, b"part")
    sock.sendall(conn.data_to_send())
    print_response(sock, conn)


def get(target, authority, path, tls_files):
    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=20)
    if tls_files:
        cert, key, ca = tls_files
        context = ssl.create_default_context(cafile=ca)
        context.check_hostname = False
        context.load_cert_chain(cert, key)
        sock = context.wrap_socket(sock)
    conn = h2.connection.H2Connection()
    conn.initiate_connection()
    scheme = "https" if tls_files else "http"
    conn.send_headers(1, [(":method", "GET"), (":scheme", scheme), (":authority", authority), (":path", path)],
                      end_stream=True)
    sock.sendall(conn.data_to_send())
    print_response(sock, conn)


def print_response(sock, conn):
    """Reads stream 1's response and prints it as one JSON object."""
    outcome = {"status": None, "body": ""}
    while True:
        data = sock.recv(65536)
        if not data:
            outcome["closed"] = True
            break
        done = False
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                outcome["status"] = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                outcome["body"] += event.data.decode()
                conn.acknowledge_received_data(event.flow_controlled_length, 1)
            elif isinstance(event, h2.events.StreamEnded):
                done = True
            elif isinstance(event, h2.events.StreamReset):
                outcome["reset"] = int(event.error_code)
                done = True
        sock.sendall(conn.data_to_send())
        if done:
            break
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]))
    elif sys.argv[1] == "stalled-body":
        stalled_body(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "get":
        get(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:8])
    else:
        rapid_reset(sys.argv[2], sys.argv[3], int(sys.argv[4]))
