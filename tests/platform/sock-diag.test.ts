/**
 * The listening sockets from the kernel's socket diagnostics: the same sockets /proc/net/tcp
 * names (against this very process's listeners), the netlink messages parsed from crafted
 * bytes, and the reader's fallback to /proc.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { procFs } from "../../src/platform/linux/proc-fs.ts";
import { diagRequest, listeningSockets, parseDiag } from "../../src/platform/linux/sock-diag.ts";
import type { TcpListener } from "../../src/platform/types.ts";

const open: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const l of open.splice(0)) l.stop(true);
});

function listen(hostname: string): number {
  const l = Bun.listen({ hostname, port: 0, socket: { data() {} } });
  open.push(l);
  return l.port;
}

const byPort = (a: TcpListener, b: TcpListener) =>
  a.port - b.port || a.inode.localeCompare(b.inode);

function ownSocketInodes(): Set<string> {
  const out = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) out.add(m[1]!);
    } catch {}
  }
  return out;
}

describe("listeningSockets", () => {
  test("names the listeners /proc/net/tcp names: port, inode, loopback or wildcard", async () => {
    const ports = new Set(["127.0.0.1", "::1", "0.0.0.0", "::"].map(listen));
    // A connection to one of them: its two ends are sockets too, but not listeners.
    const [first] = [...ports];
    const client = await Bun.connect({
      hostname: "127.0.0.1",
      port: first!,
      socket: { data() {} },
    });
    try {
      const diag = listeningSockets();
      expect(diag).not.toBeNull();
      const proc = procFs("/proc", 16, null).listeners();
      const ours = (list: TcpListener[]) => list.filter((l) => ports.has(l.port)).sort(byPort);
      expect(ours(diag!)).toEqual(ours(proc));
      expect(ours(diag!)).toHaveLength(4);
      expect(ours(diag!).every((l) => l.local)).toBe(true);
      const inodes = ownSocketInodes();
      expect(ours(diag!).every((l) => inodes.has(l.inode))).toBe(true);
    } finally {
      client.end();
    }
  });

  test("a closed listener is gone from the next reading", () => {
    const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = l.port;
    expect(listeningSockets()!.some((s) => s.port === port)).toBe(true);
    l.stop(true);
    expect(listeningSockets()!.some((s) => s.port === port)).toBe(false);
  });

  test("the real reader answers from the diagnostics, and /proc where they fail", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-diag-"));
    try {
      mkdirSync(join(dir, "self"));
      mkdirSync(join(dir, "net"));
      const row = `   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1`;
      writeFileSync(join(dir, "net", "tcp"), `header\n${row}\n`);
      writeFileSync(join(dir, "net", "tcp6"), "header\n");
      const fromDiag: TcpListener[] = [{ port: 1, inode: "9", local: false }];
      expect(procFs(dir, 16, () => fromDiag).listeners()).toEqual(fromDiag);
      const fromProc = [{ port: 8080, inode: "555", local: true }];
      expect(procFs(dir, 16, () => null).listeners()).toEqual(fromProc);
      expect(procFs(dir).listeners()).toEqual(fromProc); // not the real /proc: no diagnostics
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the async reading asks the diagnostics too, and /proc where they fail", async () => {
    const fromDiag: TcpListener[] = [{ port: 2, inode: "3", local: true }];
    expect(await procFs("/proc", 16, () => fromDiag).listenersAsync!()).toEqual(fromDiag);
    const port = listen("127.0.0.1");
    const fromProc = await procFs("/proc", 16, () => null).listenersAsync!();
    expect(fromProc.filter((l) => l.port === port)).toEqual(
      listeningSockets()!.filter((l) => l.port === port),
    );
  });
});

/** One netlink message: header, then `payload`. */
function message(type: number, payload: Uint8Array): Uint8Array {
  const len = 16 + payload.length;
  const out = new Uint8Array((len + 3) & ~3);
  const v = new DataView(out.buffer);
  v.setUint32(0, len, true);
  v.setUint16(4, type, true);
  out.set(payload, 16);
  return out;
}

/** An inet_diag_msg: family, state, source port and address, inode. */
function diagMsg(family: number, state: number, port: number, addr: number[], inode: number) {
  const m = new Uint8Array(72);
  const v = new DataView(m.buffer);
  m[0] = family;
  m[1] = state;
  v.setUint16(4, port, false);
  m.set(addr, 8);
  v.setUint32(68, inode, true);
  return message(20, m);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const v6 = (tail: number[]) => [...new Array(16 - tail.length).fill(0), ...tail];

describe("parseDiag", () => {
  test("reads each listener's port, inode and whether a local URL reaches it, to the end", () => {
    const buf = concat(
      diagMsg(2, 10, 8080, [127, 0, 0, 1], 11),
      diagMsg(2, 10, 8081, [0, 0, 0, 0], 12),
      diagMsg(2, 10, 8082, [10, 0, 0, 5], 13),
      diagMsg(10, 10, 8083, v6([1]), 14),
      diagMsg(10, 10, 8084, v6([]), 15),
      diagMsg(10, 10, 8085, v6([0xff, 0xff, 127, 0, 0, 1]), 16),
      diagMsg(10, 10, 8086, v6([0xff, 0xff, 192, 168, 1, 2]), 17),
      diagMsg(10, 10, 8087, [0xfe, 0x80, ...new Array(13).fill(0), 1], 18),
      diagMsg(2, 1, 8088, [127, 0, 0, 1], 19), // established: not a listener
      message(3, new Uint8Array(4)),
    );
    const part = parseDiag(buf, buf.length);
    expect(part.done).toBe(true);
    expect(part.error).toBe(false);
    expect(part.listeners).toEqual([
      { port: 8080, inode: "11", local: true },
      { port: 8081, inode: "12", local: true },
      { port: 8082, inode: "13", local: false },
      { port: 8083, inode: "14", local: true },
      { port: 8084, inode: "15", local: true },
      { port: 8085, inode: "16", local: true },
      { port: 8086, inode: "17", local: false },
      { port: 8087, inode: "18", local: false },
    ]);
  });

  test("a part without the end is not done; an error or a broken length fails", () => {
    const one = diagMsg(2, 10, 9000, [127, 0, 0, 1], 1);
    expect(parseDiag(one, one.length)).toEqual({
      listeners: [{ port: 9000, inode: "1", local: true }],
      done: false,
      error: false,
    });
    const err = message(2, new Uint8Array(20));
    expect(parseDiag(err, err.length).error).toBe(true);
    const broken = one.slice();
    new DataView(broken.buffer).setUint32(0, 500, true); // longer than what was read
    expect(parseDiag(broken, broken.length).error).toBe(true);
    new DataView(broken.buffer).setUint32(0, 3, true); // shorter than a header
    expect(parseDiag(broken, broken.length).error).toBe(true);
  });

  test("the request asks one family's listening TCP sockets, as a dump", () => {
    const req = diagRequest(10, 7);
    const v = new DataView(req.buffer);
    expect(req.length).toBe(72);
    expect(v.getUint32(0, true)).toBe(72);
    expect(v.getUint16(4, true)).toBe(20); // SOCK_DIAG_BY_FAMILY
    expect(v.getUint16(6, true)).toBe(0x301); // NLM_F_REQUEST | NLM_F_DUMP
    expect(v.getUint32(8, true)).toBe(7);
    expect([req[16], req[17]]).toEqual([10, 6]); // AF_INET6, IPPROTO_TCP
    expect(v.getUint32(20, true)).toBe(1 << 10); // TCP_LISTEN only
  });
});
