#!/usr/bin/python3
"""A hostile HTTP/2 server for shared/internal/http2/hostile_client_test.ts (the codec's client role).

Usage: /usr/bin/python3 hostile_server.py CASE

Listens on 127.0.0.1 (a free port, printed as "PORT <n>" on the first line), accepts one h2c
connection, waits for the client's preface and its first request HEADERS (WAIT_FOR streams, see
CASES), misbehaves as CASE says, then reads what the client sends until it closes the connection or
stays quiet, and prints one JSON line: {"goaway": [[last, code, debug]...], "rst": [[stream, code]...]}.
"""
import json
import socket
import struct
import sys
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def goaway(last, code, debug=b""):
    return frame(GOAWAY, 0, 0, struct.pack(">II", last, code) + debug)


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.enc = hpack.Encoder()
        self.buf = b""
        self.streams = []
        self.result = {"goaway": [], "rst": []}
        self.closed = False

    def send(self, *frames):
        try:
            self.sock.sendall(b"".join(frames))
        except OSError:
            self.closed = True

    def headers(self, sid, fields, end_stream=False):
        return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid, self.enc.encode(fields))

    def read(self, quiet=0.7, total=8.0, streams=0):
        """Reads until `streams` request HEADERS were seen (0: until close or `quiet` s of silence)."""
        deadline = time.time() + total
        self.sock.settimeout(quiet)
        while time.time() < deadline and not self.closed:
            if streams and len(self.streams) >= streams:
                return
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                if streams:
                    continue
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return
            self.buf += chunk
            if self.buf.startswith(PREFACE):
                self.buf = self.buf[len(PREFACE):]
            self.parse()

    def parse(self):
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                return
            ftype, sid, payload = self.buf[3], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF, self.buf[9:9 + length]
            self.buf = self.buf[9 + length:]
            if ftype == HEADERS and sid not in self.streams:
                self.streams.append(sid)
            elif ftype == GOAWAY:
                last, code = struct.unpack(">II", payload[:8])
                self.result["goaway"].append([last, code, payload[8:].decode("latin1")])
            elif ftype == RST_STREAM:
                self.result["rst"].append([sid, struct.unpack(">I", payload)[0]])


OK = [(":status", "200")]


def case_goaway_open_streams(c):
    c.send(c.headers(1, OK), goaway(1, 0, b"drain"), frame(DATA, END_STREAM, 1, b"one"))


def case_goaway_before_settings(c):
    c.send(goaway(0, 0))


def case_goaway_after_close(c):
    c.send(c.headers(1, OK, end_stream=True), c.headers(3, OK, end_stream=True), c.headers(5, OK, end_stream=True))
    c.send(goaway(0, 0), goaway(0, 0, b"again"))


def case_goaway_repeated(c):
    c.send(goaway(2**31 - 1, 0), goaway(3, 0), goaway(1, 2, b"x" * 1000), goaway(5, 0))
    c.send(c.headers(1, OK), frame(DATA, END_STREAM, 1, b"one"))


def case_rst_flood(c):
    c.send(frame(RST_STREAM, 0, 3, struct.pack(">I", 8)), frame(RST_STREAM, 0, 5, struct.pack(">I", 7)))
    c.send(frame(RST_STREAM, 0, 3, struct.pack(">I", 8)) * 2000)
    c.send(c.headers(1, OK), frame(DATA, END_STREAM, 1, b"one"))


def case_ping_flood(c):
    for _ in range(200):
        c.send(frame(PING, 0, 0, b"pingping") * 1000)
        if c.closed:
            return


def case_settings_flood(c):
    for _ in range(200):
        c.send(frame(SETTINGS, 0, 0) * 1000)
        if c.closed:
            return


def case_push_promise(c):
    c.send(frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + c.enc.encode([(":method", "GET")])))


def case_hpack_garbage(c):
    c.send(frame(HEADERS, END_HEADERS, 1, b"\x88\x41\x84\xff\xff\xff\xff"))


def case_bad_response_headers(c):
    c.send(c.headers(1, OK + [("connection", "close")]), c.headers(3, [("x-no-status", "1")]),
           c.headers(5, [(":status", "200"), ("Upper", "1")]))


def case_content_length_mismatch(c):
    c.send(c.headers(1, OK + [("content-length", "10")]), frame(DATA, END_STREAM, 1, b"abc"))


def case_window_update_overflow(c):
    c.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 2**31 - 1)))


def case_data_over_window(c):
    c.send(c.headers(1, OK))
    for _ in range(5):
        c.send(frame(DATA, 0, 1, b"x" * 16000))


def case_response_headers_too_large(c):
    block = c.enc.encode(OK + [("x-big", "a" * 70000)], huffman=False)
    parts = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    for i, part in enumerate(parts):
        c.send(frame(HEADERS if i == 0 else CONTINUATION, END_HEADERS if i == len(parts) - 1 else 0, 1, part))


def case_table_size_huge(c):
    c.send(frame(HEADERS, END_HEADERS, 1, b"\x3f\xe1\xff\xff\x03\x88"))


CASES = {name[len("case_"):].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("case_")}
NO_SETTINGS = {"goaway-before-settings"}


def main():
    name = sys.argv[1]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    print("PORT %d" % listener.getsockname()[1], flush=True)
    listener.settimeout(20)
    sock, _ = listener.accept()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c = Conn(sock)
    if name not in NO_SETTINGS:
        c.send(frame(SETTINGS, 0, 0), frame(SETTINGS, ACK, 0))
    c.read(streams=1)
    CASES[name](c)
    c.read()
    sock.close()
    print(json.dumps(c.result), flush=True)


if __name__ == "__main__":
    main()
