#!/usr/bin/python3
"""A hostile HTTP/2 client for shared/internal/http2/hostile_test.ts (Debian's /usr/bin/python3, python3-h2's hpack).

Usage: /usr/bin/python3 hostile_peer.py PORT CASE [REPEAT]

Sends the raw frames of one attack CASE (see CASES) to an h2c server on 127.0.0.1:PORT, then reads what
the server sends until it closes the connection or stays quiet, and finally checks, on a new connection,
that the server still answers a plain GET with 200. Prints one JSON line:
  {"goaway": [[last_stream_id, code, debug]...], "rst": [[stream, code]...], "status": {"1": 200},
   "acks": N (SETTINGS and PING ACKs), "closed": bool, "alive": bool}
With REPEAT (tests/bench/h2_codec_hostile_stress.ts): the case REPEAT times, then one line of counts.
Frames are built by hand (h2's state machine would refuse to send most of them); header blocks are
encoded with hpack's Encoder.
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


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def goaway(last, code, debug=b""):
    return frame(GOAWAY, 0, 0, struct.pack(">II", last, code) + debug)


def window_update(sid, inc):
    return frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", inc))


def rst(sid, code=8):
    return frame(RST_STREAM, 0, sid, struct.pack(">I", code))


def request(method="GET", path="/", extra=()):
    return [(":method", method), (":scheme", "http"), (":authority", "hostile"), (":path", path)] + list(extra)


class Peer:
    def __init__(self, port, rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.result = {"goaway": [], "rst": [], "status": {}, "acks": 0, "closed": False}
        self.buf = b""

    def send(self, *frames):
        try:
            self.sock.sendall(b"".join(frames))
        except OSError:
            self.result["closed"] = True

    def start(self):
        self.send(PREFACE, settings())

    def headers(self, sid, headers, end_stream=True):
        return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid, self.enc.encode(headers))

    def read(self, quiet=0.7, total=8.0, until=None):
        """Reads frames until the peer closes, `quiet` s of silence, `total` s, or until(result) is true."""
        deadline = time.time() + total
        self.sock.settimeout(quiet)
        while time.time() < deadline and not self.result["closed"]:
            if until and until(self.result):
                return self.result
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                break
            except OSError:
                self.result["closed"] = True
                break
            if not chunk:
                self.result["closed"] = True
                break
            self.buf += chunk
            self.parse()
        return self.result

    def parse(self):
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                return
            ftype, flags = self.buf[3], self.buf[4]
            sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload = self.buf[9:9 + length]
            self.buf = self.buf[9 + length:]
            r = self.result
            if ftype == GOAWAY:
                last, code = struct.unpack(">II", payload[:8])
                r["goaway"].append([last, code, payload[8:].decode("latin1")])
            elif ftype == RST_STREAM:
                r["rst"].append([sid, struct.unpack(">I", payload)[0]])
            elif ftype in (SETTINGS, PING) and flags & ACK:
                r["acks"] += 1
            elif ftype == HEADERS:
                try:
                    fields = self.dec.decode(payload)
                    for name, value in fields:
                        if name in (":status", b":status"):
                            r["status"][str(sid)] = int(value)
                except Exception:  # noqa: BLE001 - a block we cannot decode is recorded, not fatal
                    r["status"][str(sid)] = -1


def alive(port):
    """A plain GET on a new connection gets 200."""
    try:
        p = Peer(port)
        p.start()
        p.send(p.headers(1, request(path="/alive")))
        p.read(quiet=2.0, until=lambda r: r["status"].get("1") is not None)
        p.sock.close()
        return p.result["status"].get("1") == 200
    except OSError:
        return False


def flood(p, frames, count, batch=1000):
    for i in range(0, count, batch):
        p.send(frames * min(batch, count - i))
        if p.result["closed"]:
            return


def case_goaway_before_settings(p):
    p.send(PREFACE, goaway(0, 0))


def case_goaway_after_settings(p):
    p.start()
    p.send(goaway(0, 0, b"bye"))


def case_goaway_mid_stream(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False), frame(DATA, 0, 1, b"abc"))
    p.send(goaway(0, 0, b"going"), frame(DATA, END_STREAM, 1, b"def"))


def case_goaway_repeated(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False))
    for last, code in ((2**31 - 1, 0), (0, 2), (7, 11), (2, 1), (0, 0)):
        p.send(goaway(last, code, b"x" * 1000))
    p.send(frame(DATA, END_STREAM, 1, b"end"))


def case_goaway_then_frames(p):
    p.start()
    p.send(goaway(0, 0), p.headers(1, request()), frame(PING, 0, 0, b"12345678"), window_update(0, 100))


def case_goaway_rst_after(p):
    p.start()
    p.send(*[p.headers(i, request("POST"), end_stream=False) for i in (1, 3, 5)])
    p.send(goaway(0, 8, b"cancel"), rst(1), rst(3), rst(5))


def case_rapid_reset(p):
    p.start()
    for base in range(0, 1000, 100):
        p.send(*[p.headers(2 * (base + i) + 1, request(), end_stream=False) + rst(2 * (base + i) + 1)
                 for i in range(100)])
        if p.result["closed"]:
            return


def case_rst_closed_flood(p):
    p.start()
    p.send(p.headers(1, request()))
    p.read(until=lambda r: "1" in r["status"], quiet=1.0)
    flood(p, rst(1), 5000)


def case_settings_flood(p):
    p.start()
    flood(p, settings(), 200000)


def case_settings_large(p):
    """CVE-2020-11080: SETTINGS frames of 2,700 entries (INITIAL_WINDOW_SIZE over and over), streams open."""
    p.start()
    p.send(*[p.headers(2 * i + 1, request("POST"), end_stream=False) for i in range(50)])
    entries = [(4, 65535 + (i & 1)) for i in range(2700)]
    for _ in range(100):
        p.send(settings(*entries))
        if p.result["closed"]:
            return


def case_hpack_bomb(p):
    """A 4,000-octet field indexed once, then referenced 50 times by one octet each: 200 KB decoded, 55 fields."""
    p.start()
    value = b"v" * 4000
    block = b"\x82\x86\x84\x41\x01a" + b"\x40\x05x-big" + bytes([0x7F, 4000 - 127 - 0x80 * ((4000 - 127) // 128) | 0x80, (4000 - 127) // 128]) + value
    block += b"\xbe" * 50
    p.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block))


def case_ping_flood(p):
    p.start()
    flood(p, frame(PING, 0, 0, b"pingping"), 200000)


def case_continuation_flood(p):
    p.start()
    block = p.enc.encode(request())
    p.send(frame(HEADERS, END_STREAM, 1, block))
    flood(p, frame(CONTINUATION, 0, 1, b"\x00"), 10000)


def case_continuation_empty(p):
    p.start()
    p.send(frame(HEADERS, END_STREAM, 1, p.enc.encode(request())))
    flood(p, frame(CONTINUATION, 0, 1), 5)  # fewer than the CONTINUATION limit: only the empty-payload rule applies


def case_continuation_interleaved(p):
    p.start()
    p.send(frame(HEADERS, END_STREAM, 1, p.enc.encode(request())), frame(PING, 0, 0, b"12345678"))


def send_split(p, sid, block):
    """A header block in 16 KiB HEADERS + CONTINUATION frames."""
    parts = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    for i, part in enumerate(parts):
        flags = (END_STREAM if i == 0 else 0) | (END_HEADERS if i == len(parts) - 1 else 0)
        p.send(frame(HEADERS if i == 0 else CONTINUATION, flags, sid, part))


def case_header_list_too_large(p):
    p.start()
    send_split(p, 1, p.enc.encode(request(extra=[("x-big", "a" * 70000)]), huffman=False))


def case_too_many_headers(p):
    p.start()
    send_split(p, 1, p.enc.encode(request(extra=[("x-h%d" % i, "1") for i in range(101)])))


def raw_block_case(block):
    def run(p):
        p.start()
        p.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block))
    return run


def case_window_update_conn_overflow(p):
    p.start()
    p.send(window_update(0, 2**31 - 1))


def case_window_update_stream_overflow(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False), window_update(1, 2**31 - 1))


def case_window_update_zero_conn(p):
    p.start()
    p.send(window_update(0, 0))


def case_window_update_zero_stream(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False), window_update(1, 0))


def case_window_update_flood(p):
    # A response first, so that the limit (which grows with DATA frames sent) is not at its floor of 5.
    p.start()
    p.send(p.headers(1, request()))
    p.read(until=lambda r: "1" in r["status"], quiet=1.0)
    time.sleep(0.1)
    flood(p, window_update(0, 1), 1000)


def case_initial_window_overflow(p):
    p.send(PREFACE, settings((4, 2**31)))


def case_empty_data_flood(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False))
    flood(p, frame(DATA, 0, 1), 1000)


def case_padded_data_flood(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False))
    flood(p, frame(DATA, 0x8, 1, b"\x04" + b"\x00" * 4), 1000)  # PADDED, 4 octets of padding, no data


def case_priority_flood(p):
    p.start()
    flood(p, frame(PRIORITY, 0, 3, struct.pack(">IB", 0, 15)), 10000)


def case_stream_id_decrease(p):
    p.start()
    p.send(p.headers(5, request()), p.headers(3, request()))


def case_stream_id_reuse(p):
    p.start()
    p.send(p.headers(1, request()))
    p.read(until=lambda r: "1" in r["status"], quiet=1.0)
    p.send(p.headers(1, request()))


def case_stream_id_even(p):
    p.start()
    p.send(p.headers(2, request()))


def case_data_closed_stream(p):
    p.start()
    p.send(p.headers(1, request()))
    p.read(until=lambda r: "1" in r["status"], quiet=1.0)
    time.sleep(0.1)
    p.send(frame(DATA, 0, 1, b"late"))


def case_data_idle_stream(p):
    p.start()
    p.send(frame(DATA, 0, 7, b"x"))


def case_max_concurrent(p):
    p.start()
    p.send(*[p.headers(2 * i + 1, request("POST"), end_stream=False) for i in range(101)])


def case_bad_preface(p):
    p.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")


def case_frame_too_large(p):
    p.start()
    p.send(p.headers(1, request("POST"), end_stream=False), frame(DATA, 0, 1, b"x" * 20000))


def case_push_promise(p):
    p.start()
    p.send(frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + p.enc.encode(request())))


def case_uppercase_header(p):
    p.start()
    p.send(p.headers(1, request(extra=[("X-Upper", "1")])))


def case_connection_header(p):
    p.start()
    p.send(p.headers(1, request(extra=[("connection", "keep-alive")])))


def case_content_length_mismatch(p):
    p.start()
    p.send(p.headers(1, request("POST", extra=[("content-length", "10")]), end_stream=False),
           frame(DATA, END_STREAM, 1, b"abc"))


CASES = {
    name[len("case_"):].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("case_")
}
CASES.update({
    # A dynamic table size update to 2^23 (over the 4,096 advertised).
    "hpack-table-size-huge": raw_block_case(b"\x3f\xe1\xff\xff\x03\x82\x86\x84"),
    # :authority as a Huffman string of 30 ones (EOS).
    "hpack-huffman-garbage": raw_block_case(b"\x82\x86\x84\x41\x84\xff\xff\xff\xff"),
    # Indexed field 255: the dynamic table is empty.
    "hpack-index-out-of-range": raw_block_case(b"\x82\x86\x84\xff\x80\x01"),
    # An integer that never ends within 2^31.
    "hpack-integer-overflow": raw_block_case(b"\x82\xff" + b"\xff" * 10 + b"\x01"),
})

FLOODS = {"settings-flood", "ping-flood"}


def main():
    port, name = int(sys.argv[1]), sys.argv[2]
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if repeat > 1:
        return stress(port, name, repeat)
    p = Peer(port, rcvbuf=4096 if name in FLOODS else None)
    CASES[name](p)
    p.read()
    p.sock.close()
    p.result["alive"] = alive(port)
    print(json.dumps(p.result))


def stress(port, name, repeat):
    """The case `repeat` times (the benchmark): counts of the GOAWAY codes seen, then one alive check."""
    codes = {}
    started = time.time()
    for _ in range(repeat):
        p = Peer(port)
        CASES[name](p)
        p.read(quiet=0.3)
        p.sock.close()
        key = ",".join(str(g[1]) for g in p.result["goaway"][:1]) or "none"
        codes[key] = codes.get(key, 0) + 1
    print(json.dumps({"case": name, "connections": repeat, "seconds": round(time.time() - started, 1),
                      "goaway_codes": codes, "alive": alive(port)}))


if __name__ == "__main__":
    main()
