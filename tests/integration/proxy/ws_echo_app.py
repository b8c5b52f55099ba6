"""A minimal RFC 6455 WebSocket echo server on the standard library, for the mesh's WebSocket tests.

Usage: ws_echo_app.py <port>. Prints "listening <port>" once bound. A request without
`Upgrade: websocket` gets 400 (so a proxy that drops the Upgrade fails the test). After the 101,
every text or binary message is sent back unmasked with the same opcode; a close frame is answered
with a close frame and ends the connection.
"""
import base64
import hashlib
import socketserver
import sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def read_exact(rfile, n):
    data = rfile.read(n)
    if len(data) != n:
        raise EOFError
    return data


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        headers = {}
        self.rfile.readline()  # request line
        while True:
            line = self.rfile.readline().decode("latin-1").rstrip("\r\n")
            if not line:
                break
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        key = headers.get("sec-websocket-key")
        if headers.get("upgrade", "").lower() != "websocket" or key is None:
            body = b"not a WebSocket upgrade\n"
            self.wfile.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
            return
        accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest())
        self.wfile.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        self.wfile.flush()
        try:
            while True:
                b0, b1 = read_exact(self.rfile, 2)
                opcode = b0 & 0x0F
                length = b1 & 0x7F
                if length == 126:
                    length = int.from_bytes(read_exact(self.rfile, 2), "big")
                elif length == 127:
                    length = int.from_bytes(read_exact(self.rfile, 8), "big")
                mask = read_exact(self.rfile, 4) if b1 & 0x80 else b"\0\0\0\0"
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(read_exact(self.rfile, length)))
                self.wfile.write(frame(opcode, payload))
                self.wfile.flush()
                if opcode == 0x8:
                    return
        except EOFError:
            return


def frame(opcode, payload):
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
    return head + payload


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    with Server(("127.0.0.1", int(sys.argv[1])), Handler) as server:
        print("listening", server.server_address[1], flush=True)
        server.serve_forever()
