/**
 * What qm reads from Linux's /proc (proc(5)) to know which processes are its models' and
 * who holds a port: the `ProcFs` of src/platform/types.ts, so the tracking logic is tested
 * against a fake table. `procFs()` reports `available: false` where there is no /proc.
 */
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync } from "node:fs";
import { nextTurn } from "../../shared/timer.ts";
import type { ProcEntry, ProcFs, TcpListener } from "../types.ts";
import { listeningSockets } from "./sock-diag.ts";

/** `/proc/PID/stat`; `comm` is in parentheses and may itself hold spaces and ")". */
export function parseStat(pid: number, text: string): ProcEntry | null {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return null;
  const f = text.slice(close + 2).split(" ");
  // f[0] is field 3 (state), so field N is f[N - 3].
  const [ppid, pgrp, session, start] = [f[1], f[2], f[3], f[19]].map(Number);
  if (![ppid, pgrp, session, start].every((n) => Number.isInteger(n))) return null;
  return {
    pid,
    ppid: ppid!,
    pgrp: pgrp!,
    session: session!,
    state: f[0] ?? "?",
    start: start!,
    comm: text.slice(open + 1, close),
  };
}

const LISTEN = "0A";
const V4_ANY = "00000000";
const V6_ANY = "0".repeat(32);
const V6_LOOPBACK = `${"0".repeat(24)}01000000`;
const V4_MAPPED = `${"0".repeat(16)}FFFF0000`;

/**
 * `/proc/net/tcp` or `tcp6`: "sl local rem st … uid timeout inode". Addresses are hex in
 * host byte order (little-endian words), so 127.0.0.1 reads `0100007F`.
 */
export function parseNetTcp(text: string): TcpListener[] {
  const out: TcpListener[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[3] !== LISTEN) continue;
    const [addr = "", portHex = ""] = f[1]!.split(":");
    out.push({ port: Number.parseInt(portHex, 16), inode: f[9]!, local: isLocal(addr) });
  }
  return out;
}

function isLocal(addr: string): boolean {
  const v4 = (a: string) => a === V4_ANY || a.endsWith("7F"); // 127.0.0.0/8
  if (addr.length === 8) return v4(addr);
  const a = addr.toUpperCase();
  if (a === V6_ANY || a === V6_LOOPBACK) return true;
  return a.startsWith(V4_MAPPED) && v4(a.slice(24));
}

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // gone while we looked, or not ours to read
  }
}

/**
 * Bytes of a /proc table read per turn of the event loop by `readSliced`: /proc/net/tcp has a
 * 150-byte line per socket, so a slice is about 400 sockets, well under a millisecond to read.
 */
export const READ_SLICE = 64 * 1024;

/**
 * The whole file, read `slice` bytes per turn of the event loop ("" when it cannot be read).
 * /proc generates a table as it is read, whole lines per read, so a box with tens of thousands
 * of sockets never holds qm for the whole table at once.
 */
export async function readSliced(path: string, slice = READ_SLICE): Promise<string> {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return "";
  }
  const parts: Buffer[] = [];
  try {
    for (;;) {
      const buf = Buffer.allocUnsafe(slice);
      const n = readSync(fd, buf, 0, slice, null);
      if (n === 0) break;
      parts.push(buf.subarray(0, n));
      // A full slice: more may follow, read it in the next turn (a short read is near the end).
      if (n === slice) await nextTurn();
    }
  } catch {
    return ""; // gone while we read it
  } finally {
    closeSync(fd);
  }
  return Buffer.concat(parts).toString("utf8");
}

/**
 * Processes read per turn of the event loop by `listAsync`: each is an open, a read and a close
 * of /proc/PID/stat (10 – 20 µs), so a slice holds the loop well under a millisecond.
 */
export const LIST_SLICE = 16;

/**
 * The real /proc (or another directory laid out like it); `slice`: processes `listAsync` reads
 * per turn of the event loop; `sockets`: the listening sockets read another way (the real
 * /proc's: the kernel's socket diagnostics, sock-diag.ts), null when that fails.
 */
export function procFs(
  root = "/proc",
  slice = LIST_SLICE,
  sockets: (() => TcpListener[] | null) | null = root === "/proc" ? listeningSockets : null,
): ProcFs {
  let available = false;
  try {
    available = readdirSync(root).includes("self");
  } catch {}
  const entry = (pid: number) => {
    const text = read(`${root}/${pid}/stat`);
    return text === null ? null : parseStat(pid, text);
  };
  return {
    available,
    // /proc/net/tcp lists every socket of the network namespace, whoever holds it.
    listenersComplete: available,
    entry,
    list() {
      if (!available) return [];
      const out: ProcEntry[] = [];
      for (const name of readdirSync(root)) {
        const c = name.charCodeAt(0);
        if (c < 48 || c > 57) continue;
        const e = entry(Number(name));
        if (e) out.push(e);
      }
      return out;
    },
    // The table read a slice at a time, the event loop running between slices: one read per
    // process, a box with hundreds of them would otherwise hold every stream for milliseconds.
    async listAsync() {
      if (!available) return [];
      const out: ProcEntry[] = [];
      let read = 0;
      for (const name of readdirSync(root)) {
        const c = name.charCodeAt(0);
        if (c < 48 || c > 57) continue;
        if (read > 0 && read % slice === 0) await nextTurn();
        read++;
        const e = entry(Number(name));
        if (e) out.push(e);
      }
      return out;
    },
    environ(pid) {
      const text = read(`${root}/${pid}/environ`);
      return text === null || text === "" ? null : text.split("\0").filter(Boolean);
    },
    socketInodes(pid) {
      let fds: string[];
      try {
        fds = readdirSync(`${root}/${pid}/fd`);
      } catch {
        return null;
      }
      const out = new Set<string>();
      for (const fd of fds) {
        try {
          const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`${root}/${pid}/fd/${fd}`));
          if (m) out.add(m[1]!);
        } catch {}
      }
      return out;
    },
    listeners() {
      const diag = sockets?.() ?? null;
      if (diag !== null) return diag;
      return ["tcp", "tcp6"].flatMap((f) => parseNetTcp(read(`${root}/net/${f}`) ?? ""));
    },
    // The diagnostics take a fraction of a millisecond; /proc is read in slices on this
    // thread: a read on Bun's thread pool took 3 – 4 ms to come back here even for a table of
    // a dozen sockets, and every start of a model waits for it.
    async listenersAsync() {
      const diag = sockets?.() ?? null;
      if (diag !== null) return diag;
      const out: TcpListener[] = [];
      for (const f of ["tcp", "tcp6"])
        out.push(...parseNetTcp(await readSliced(`${root}/net/${f}`)));
      return out;
    },
  };
}
