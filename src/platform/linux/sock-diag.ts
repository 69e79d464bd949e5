/**
 * The listening TCP sockets from the kernel's socket diagnostics (netlink `NETLINK_SOCK_DIAG`,
 * sock_diag(7): what `ss -lt` asks), through `bun:ffi`.
 *
 * Reading /proc/net/tcp makes the kernel walk its whole connection table, listening or not,
 * whose size follows the box's memory, not its sockets: 8 – 10 ms here for a table holding one
 * listener, once per model start (the check that the port's listener is the model's own).
 * Asked for listeners only, the kernel walks the listening table alone: 0.2 ms here, and the
 * same sockets, inodes and all.
 *
 * `listeningSockets()` gives null where libc, netlink or the answer fails; the caller reads
 * /proc then, as before. Each call opens, asks and closes its own socket (no state to leak); the
 * dump is queued by the kernel before `send` returns, so every `recv` is non-blocking and an
 * answer that is not there is a failure, never a wait.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import type { TcpListener } from "../types.ts";
import { LIBC_NAMES } from "./libc.ts";

const AF_NETLINK = 16;
const AF_INET = 2;
const AF_INET6 = 10;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_SOCK_DIAG = 4;
const IPPROTO_TCP = 6;
const TCP_LISTEN = 10;
const SOCK_DIAG_BY_FAMILY = 20;
const NLM_F_REQUEST = 1;
const NLM_F_DUMP = 0x300;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const MSG_DONTWAIT = 0x40;

/** nlmsghdr (16 bytes) + inet_diag_req_v2 (56). */
const REQUEST_BYTES = 72;
/** Offsets in inet_diag_msg, after the 16-byte nlmsghdr. */
const MSG_STATE = 1;
const MSG_SPORT = 4;
const MSG_SRC = 8;
const MSG_INODE = 68;
const MSG_BYTES = 72;
const RECV_BYTES = 64 * 1024;

interface Calls {
  socket(domain: number, type: number, protocol: number): number;
  send(fd: number, buf: Uint8Array, len: number): number;
  recv(fd: number, buf: Uint8Array): number;
  close(fd: number): void;
}

let calls: Calls | null | undefined;

function load(): Calls | null {
  if (calls !== undefined) return calls;
  calls = null;
  const { i32, i64, u64 } = FFIType;
  const symbols = {
    socket: { args: [i32, i32, i32], returns: i32 },
    send: { args: [i32, FFIType.ptr, u64, i32], returns: i64 },
    recv: { args: [i32, FFIType.ptr, u64, i32], returns: i64 },
    close: { args: [i32], returns: i32 },
  } as const;
  for (const name of LIBC_NAMES) {
    try {
      const s = dlopen(name, symbols).symbols;
      calls = {
        socket: (d, t, p) => s.socket(d, t, p),
        send: (fd, buf, len) => Number(s.send(fd, ptr(buf), len, 0)),
        recv: (fd, buf) => Number(s.recv(fd, ptr(buf), buf.length, MSG_DONTWAIT)),
        close: (fd) => void s.close(fd),
      };
      break;
    } catch {
      // the next name; none: null, and /proc is read
    }
  }
  return calls;
}

/** The dump request for `family`'s listening TCP sockets. */
export function diagRequest(family: number, seq: number): Uint8Array {
  const buf = new Uint8Array(REQUEST_BYTES);
  const v = new DataView(buf.buffer);
  v.setUint32(0, REQUEST_BYTES, true);
  v.setUint16(4, SOCK_DIAG_BY_FAMILY, true);
  v.setUint16(6, NLM_F_REQUEST | NLM_F_DUMP, true);
  v.setUint32(8, seq, true);
  buf[16] = family;
  buf[17] = IPPROTO_TCP;
  v.setUint32(20, 1 << TCP_LISTEN, true);
  return buf;
}

/** What one `recv` held: its listeners, and whether the dump ended (`error`: it failed). */
export interface DiagPart {
  listeners: TcpListener[];
  done: boolean;
  error: boolean;
}

/** Parses the netlink messages of one `recv` (`bytes` of `buf`). */
export function parseDiag(buf: Uint8Array, bytes: number): DiagPart {
  const v = new DataView(buf.buffer, buf.byteOffset, bytes);
  const part: DiagPart = { listeners: [], done: false, error: false };
  let at = 0;
  while (at + 16 <= bytes) {
    const len = v.getUint32(at, true);
    const type = v.getUint16(at + 4, true);
    if (len < 16 || at + len > bytes) {
      part.error = true;
      return part;
    }
    if (type === NLMSG_DONE) {
      part.done = true;
      return part;
    }
    if (type === NLMSG_ERROR) {
      part.error = true;
      return part;
    }
    const m = at + 16;
    if (
      type === SOCK_DIAG_BY_FAMILY &&
      len >= 16 + MSG_BYTES &&
      buf[m + MSG_STATE] === TCP_LISTEN
    ) {
      part.listeners.push({
        port: v.getUint16(m + MSG_SPORT, false),
        inode: String(v.getUint32(m + MSG_INODE, true)),
        local: isLocal(buf[m]!, buf.subarray(m + MSG_SRC, m + MSG_SRC + 16)),
      });
    }
    at += (len + 3) & ~3;
  }
  return part;
}

/** A loopback or wildcard address (network byte order): what `http://127.0.0.1:PORT` reaches. */
function isLocal(family: number, a: Uint8Array): boolean {
  const v4 = (b: Uint8Array) => b[0] === 127 || b.every((x) => x === 0);
  if (family === AF_INET) return v4(a.subarray(0, 4));
  const zeros = (from: number, to: number) => a.subarray(from, to).every((x) => x === 0);
  if (zeros(0, 15) && (a[15] === 0 || a[15] === 1)) return true; // :: and ::1
  return zeros(0, 10) && a[10] === 0xff && a[11] === 0xff && v4(a.subarray(12, 16));
}

let seq = 0;
let buf: Uint8Array | null = null;

/** Every listening TCP socket (IPv4 and IPv6) of qm's network namespace; null: ask /proc. */
export function listeningSockets(): TcpListener[] | null {
  const c = load();
  if (c === null) return null;
  const fd = c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return null;
  try {
    const out: TcpListener[] = [];
    buf ??= new Uint8Array(RECV_BYTES);
    for (const family of [AF_INET, AF_INET6]) {
      const req = diagRequest(family, ++seq);
      if (c.send(fd, req, req.length) !== req.length) return null;
      for (;;) {
        const n = c.recv(fd, buf);
        if (n <= 0) return null;
        const part = parseDiag(buf, n);
        out.push(...part.listeners);
        if (part.error) return null;
        if (part.done) break;
      }
    }
    return out;
  } finally {
    c.close(fd);
  }
}
