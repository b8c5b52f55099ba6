/**
 * The original destination of a connection that iptables REDIRECTed to the proxy (nat table): Linux
 * keeps it in the connection's conntrack entry and returns it to the socket's owner with
 * `getsockopt(fd, SOL_IP, SO_ORIGINAL_DST)` (IPv6: `SOL_IPV6, IP6T_SO_ORIGINAL_DST`), which needs no
 * privilege. Istio's Envoy reads it the same way (`use_original_dst`, the `original_dst` listener
 * filter). Deno has no such call, so it is made through FFI (./libc.ts); see ./README.md for why this
 * design was chosen over NETMAP, per-port rules, TPROXY and conntrack, with the figures.
 *
 * The socket's file descriptor: Deno's node:net TCP handle answers `fdForIpc()` (not public API)
 * with a duplicate of it ({@link socketFd}), closed after use. When the handle has no such method
 * (another Deno), the descriptor is found by scanning the open descriptors for the socket's pair of
 * addresses ({@link findFdByScan}), whose cost grows with the open descriptors (figures in
 * ./README.md).
 *
 * @module
 */
import type net from "node:net";
import { type Libc, openLibc } from "./libc.ts";

/** Where the application meant to connect. */
export interface OriginalDestination {
  /** Dotted IPv4 or RFC 5952 IPv6 text. */
  address: string;
  /** TCP port, 1-65535. */
  port: number;
  family: 4 | 6;
}

/**
 * The answer for one socket:
 * - `redirected`: the connection was REDIRECTed (its original destination differs from the local
 *   address);
 * - `direct`: it came to the listener's address itself, as a forward-proxy client or a test does:
 *   its conntrack entry names the socket's own local address, or it has none (ENOENT: REDIRECT works
 *   through conntrack, so a connection it does not track was not redirected);
 * - `unknown`: no answer, with the reason (no permission, no descriptor, no conntrack entry).
 */
export type DestinationResult =
  | { kind: "redirected"; destination: OriginalDestination }
  | { kind: "direct"; destination: OriginalDestination }
  | { kind: "unknown"; reason: string };

const SOL_IP = 0;
const SOL_IPV6 = 41;
/** SO_ORIGINAL_DST (linux/netfilter_ipv4.h) and IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/ip6_tables.h). */
const SO_ORIGINAL_DST = 80;
const AF_INET = 2;
const AF_INET6 = 10;
const ENOENT = 2;
/** Where {@link findFdByScan} stops: fds above this are not searched. */
export const MAX_SCAN_FD = 65536;

// One set of buffers per thread: every call below is synchronous.
const addr = new Uint8Array(128);
const addrView = new DataView(addr.buffer);
const lenBuf = new Uint32Array(1);
const lenBytes = new Uint8Array(lenBuf.buffer);

/** The address in `addr` (a sockaddr_in or sockaddr_in6), or undefined for another family. */
function sockaddr(): OriginalDestination | undefined {
  const family = addrView.getUint16(0, true);
  const port = addrView.getUint16(2, false);
  if (family === AF_INET) return { address: `${addr[4]}.${addr[5]}.${addr[6]}.${addr[7]}`, port, family: 4 };
  if (family !== AF_INET6) return undefined;
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(addrView.getUint16(8 + 2 * i, false).toString(16));
  return { address: compressV6(groups), port, family: 6 };
}

/** RFC 5952: the longest run (2 or more) of zero groups becomes `::`; IPv4-mapped as ::ffff:a.b.c.d. */
function compressV6(g: string[]): string {
  if (g.slice(0, 5).every((x) => x === "0") && g[5] === "ffff") {
    const n = (i: number) => parseInt(g[i], 16);
    return `::ffff:${n(6) >> 8}.${n(6) & 255}.${n(7) >> 8}.${n(7) & 255}`;
  }
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === "0") j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (best < 0) return g.join(":");
  return `${g.slice(0, best).join(":")}::${g.slice(best + bestLen).join(":")}`;
}

type NameCall = "getsockname" | "getpeername";

/** Whether `fd`'s local (getsockname) or peer (getpeername) address is `address`:`port`. */
function nameIs(libc: Libc, call: NameCall, fd: number, address: string, port: number): boolean {
  lenBuf[0] = addr.length;
  if (libc[call](fd, addr, lenBytes) !== 0) return false;
  // The port first: cheap, and it tells most sockets apart without formatting the address.
  if (addrView.getUint16(2, false) !== port) return false;
  return sameAddress(sockaddr()?.address, address);
}

/** node:net reports IPv4 peers of a dual-stack socket as `::ffff:a.b.c.d`; the kernel may not. */
function sameAddress(kernel: string | undefined, node: string): boolean {
  if (kernel === undefined) return false;
  if (kernel === node) return true;
  const strip = (a: string) => a.startsWith("::ffff:") ? a.slice(7) : a;
  return strip(kernel) === strip(node);
}

/** Whether `fd` is the socket with these local and peer addresses. */
export function isSocketFd(libc: Libc, fd: number, socket: SocketAddresses): boolean {
  return nameIs(libc, "getpeername", fd, socket.remoteAddress, socket.remotePort) &&
    nameIs(libc, "getsockname", fd, socket.localAddress, socket.localPort);
}

/** The addresses that identify a connected TCP socket (a node:net Socket has them). */
export interface SocketAddresses {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
}

/**
 * Finds the descriptor of the socket with these addresses by trying `hint` and then every fd from 3
 * to {@link MAX_SCAN_FD}; -1 when none matches. Cost: two syscalls per open descriptor below it.
 */
export function findFdByScan(libc: Libc, socket: SocketAddresses, hint = -1): number {
  if (hint >= 0 && isSocketFd(libc, hint, socket)) return hint;
  let closedRun = 0;
  for (let fd = 3; fd < MAX_SCAN_FD; fd++) {
    lenBuf[0] = addr.length;
    if (libc.getpeername(fd, addr, lenBytes) !== 0) {
      // A long run of unused descriptors: the table ends here (Linux hands out the lowest free one).
      if (++closedRun > 4096) break;
      continue;
    }
    closedRun = 0;
    if (isSocketFd(libc, fd, socket)) return fd;
  }
  return -1;
}

let lastFd = -1;
/** Whether this Deno's `fdForIpc()` was seen to return a new duplicate at each call. */
let fdForIpcDuplicates = false;

/** A descriptor of the socket, and whether it is a duplicate to close after use. */
export interface SocketFd {
  fd: number;
  /** A duplicate made for the caller ({@link socketFd}): close it after use. */
  owned: boolean;
}

/**
 * A descriptor of the socket: a duplicate from its handle's `fdForIpc()` (Deno 2.9's node:net TCP
 * handle duplicates the descriptor with F_DUPFD_CLOEXEC at every call; until two calls have given
 * different numbers once, each lookup checks it, since the same number twice would be the socket's
 * own descriptor, which must not be closed), else the socket's own, found by a scan. -1 when not found.
 */
export function socketFd(libc: Libc, socket: net.Socket): SocketFd {
  const handle = (socket as unknown as { _handle?: { fdForIpc?: () => number } })._handle;
  if (typeof handle?.fdForIpc === "function") {
    const a = handle.fdForIpc();
    if (a >= 0) {
      if (fdForIpcDuplicates) return { fd: a, owned: true };
      // The first time only: two different numbers prove that each call duplicates.
      const b = handle.fdForIpc();
      if (b === a) return { fd: a, owned: false };
      if (b >= 0) libc.close(b);
      fdForIpcDuplicates = true;
      return { fd: a, owned: true };
    }
  }
  const addrs = addressesOf(socket);
  if (addrs === undefined) return { fd: -1, owned: false };
  lastFd = findFdByScan(libc, addrs, lastFd + 1);
  return { fd: lastFd, owned: false };
}

function ownAddress(socket: net.Socket, v6: boolean): OriginalDestination {
  return { address: socket.localAddress ?? "", port: socket.localPort ?? 0, family: v6 ? 6 : 4 };
}

function addressesOf(socket: net.Socket): SocketAddresses | undefined {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (localAddress === undefined || localPort === undefined) return undefined;
  if (remoteAddress === undefined || remotePort === undefined) return undefined;
  return { localAddress, localPort, remoteAddress, remotePort };
}

/**
 * The original destination of an accepted connection.
 *
 * @param socket a connected node:net socket accepted by a listener the nat table redirects to
 * @returns `redirected` with the address and port the application connected to; `direct` when the
 *   conntrack entry names the socket's own local address or there is none; `unknown` with the reason
 *   when it cannot be read: libc not usable (no `--allow-ffi` permission: the reason names the flag),
 *   the descriptor not found, another getsockopt error. Never throws.
 */
export function originalDestination(socket: net.Socket): DestinationResult {
  const opened = openLibc();
  if (!opened.ok) return { kind: "unknown", reason: opened.reason };
  const { fd, owned } = socketFd(opened.libc, socket);
  if (fd < 0) return { kind: "unknown", reason: "the socket's file descriptor was not found" };
  try {
    return destinationOfFd(opened.libc, opened.errno, fd, socket);
  } finally {
    if (owned) opened.libc.close(fd);
  }
}

/** {@link originalDestination} of a descriptor already found (the benchmark compares lookups with it). */
export function destinationOfFd(
  libc: Libc,
  errno: () => number,
  fd: number,
  socket: net.Socket,
): DestinationResult {
  const v6 = socket.localAddress?.includes(":") === true && !socket.localAddress.startsWith("::ffff:");
  lenBuf[0] = v6 ? 28 : 16;
  if (libc.getsockopt(fd, v6 ? SOL_IPV6 : SOL_IP, SO_ORIGINAL_DST, addr, lenBytes) !== 0) {
    const e = errno();
    // REDIRECT works through conntrack: a connection without an entry was not redirected.
    if (e === ENOENT) return { kind: "direct", destination: ownAddress(socket, v6) };
    return { kind: "unknown", reason: `getsockopt(SO_ORIGINAL_DST) failed: errno ${e}` };
  }
  const destination = sockaddr();
  if (destination === undefined) return { kind: "unknown", reason: "SO_ORIGINAL_DST gave no IP address" };
  const direct = destination.port === socket.localPort &&
    sameAddress(destination.address, socket.localAddress ?? "");
  return { kind: direct ? "direct" : "redirected", destination };
}
