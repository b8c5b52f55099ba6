/**
 * Which capture designs need privilege at run time: each probe runs as uid 1337 (the sidecar's user,
 * no capabilities, via setpriv) and as root, and prints what the kernel answered.
 * - TPROXY: the listener needs IP_TRANSPARENT (setsockopt SOL_IP 19), which needs CAP_NET_ADMIN;
 * - conntrack lookups: a NETLINK_NETFILTER IPCTNL_MSG_CT_GET dump needs CAP_NET_ADMIN, and
 *   /proc/net/nf_conntrack is root's only (0440);
 * - SO_ORIGINAL_DST (the chosen design): getsockopt on the proxy's own accepted socket needs nothing
 *   (proxy/capture/original_destination_test.ts reads it; here: ENOENT, an unredirected socket, not EPERM).
 *
 *   ./dev deno run -A tests/bench/capture/privileges.ts
 *
 * @module
 */
const PROBES: Record<string, string> = {
  "TPROXY: setsockopt(IP_TRANSPARENT)": `import socket
s = socket.socket()
s.setsockopt(socket.SOL_IP, 19, 1)
print("allowed")`,
  "conntrack: netlink CT_GET dump": `import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
s.send(struct.pack("=LHHLL", 20, (1 << 8) | 1, 0x301, 1, 0) + struct.pack("=BBH", 2, 0, 0))
d = s.recv(65536)
t = struct.unpack("=H", d[4:6])[0]
e = struct.unpack("=i", d[16:20])[0] if t == 2 else 0
print("refused: errno %d (EPERM)" % -e if e == -1 else "allowed")`,
  "conntrack: read /proc/net/nf_conntrack": `open("/proc/net/nf_conntrack").read(1)
print("allowed")`,
  "SO_ORIGINAL_DST: getsockopt on an own socket": `import socket, errno
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
try:
    a.getsockopt(socket.SOL_IP, 80, 16); print("allowed")
except OSError as e:
    print("allowed (no redirect here: %s)" % errno.errorcode[e.errno] if e.errno != errno.EPERM else "refused: EPERM")`,
};

for (const [name, script] of Object.entries(PROBES)) {
  for (const who of ["uid 1337", "root"]) {
    const argv = who === "root" ? [] : ["setpriv", "--reuid", "1337", "--regid", "1337", "--clear-groups"];
    const out = await new Deno.Command(argv[0] ?? "/usr/bin/python3", {
      args: [...argv.slice(1), ...(argv.length ? ["/usr/bin/python3"] : []), "-c", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.success ? out.stdout : out.stderr).trim().split("\n").at(-1);
    console.log(`${name} as ${who}: ${text}`);
  }
}
