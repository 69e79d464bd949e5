/** Parsing /proc (stat, net/tcp) and the real reader against this very process. */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseNetTcp, parseStat, procFs, readSliced } from "../../src/platform/linux/proc-fs.ts";

const linuxProc = procFs();

const listeners: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const l of listeners.splice(0)) l.stop(true);
});

describe("parseStat", () => {
  test("reads state, ppid, group, session and start time after a comm with ') ' in it", () => {
    const fields = ["S", "10", "11", "12", ...Array.from({ length: 15 }, () => "0"), "4242", "9"];
    const e = parseStat(77, `77 (evil) (name) ${fields.join(" ")}`);
    expect(e).toEqual({
      pid: 77,
      ppid: 10,
      pgrp: 11,
      session: 12,
      state: "S",
      start: 4242,
      comm: "evil) (name",
    });
  });

  test("garbage is null", () => {
    expect(parseStat(1, "no parens here")).toBeNull();
    expect(parseStat(1, "1 (x) S a b c")).toBeNull();
  });
});

describe("parseNetTcp", () => {
  const header =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
  const row = (local: string, st: string, inode: string) =>
    `   0: ${local} 00000000:0000 ${st} 00000000:00000000 00:00000000 00000000     0        0 ${inode} 1 0000000000000000 100 0 0 10 0`;

  test("keeps LISTEN sockets, with whether a loopback URL reaches them", () => {
    const v4 = [
      header,
      row("0100007F:1F90", "0A", "11"), // 127.0.0.1:8080
      row("00000000:1F91", "0A", "12"), // 0.0.0.0:8081
      row("0500A8C0:1F92", "0A", "13"), // 192.168.0.5:8082
      row("0100007F:1F93", "06", "0"), // TIME_WAIT: not a listener
    ].join("\n");
    expect(parseNetTcp(v4)).toEqual([
      { port: 8080, inode: "11", local: true },
      { port: 8081, inode: "12", local: true },
      { port: 8082, inode: "13", local: false },
    ]);
    const v6 = [
      header,
      row("00000000000000000000000001000000:0050", "0A", "21"), // [::1]:80
      row("00000000000000000000000000000000:0051", "0A", "22"), // [::]:81
      row("0000000000000000FFFF00000100007F:0052", "0A", "23"), // ::ffff:127.0.0.1
      row("B80D0120000000000000000001000000:0053", "0A", "24"), // 2001:db8::1
    ].join("\n");
    expect(parseNetTcp(v6).map((l) => [l.port, l.local])).toEqual([
      [80, true],
      [81, true],
      [82, true],
      [83, false],
    ]);
  });
});

describe("the real /proc", () => {
  test("this process: its entry, and the socket behind a port it listens on", () => {
    expect(linuxProc.available).toBe(true);
    const me = linuxProc.entry(process.pid)!;
    expect(me.ppid).toBe(process.ppid);
    expect(me.start).toBeGreaterThan(0);
    const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    listeners.push(l);
    const mine = linuxProc.listeners().filter((x) => x.port === l.port);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.local).toBe(true);
    expect(linuxProc.socketInodes(process.pid)!.has(mine[0]!.inode)).toBe(true);
  });

  test("a child's environment", async () => {
    // The child says "up" only once the shell runs, so its environment is in place by then.
    // The shell waits on its stdin: no grandchild to leave behind when it is killed.
    const child = Bun.spawn(["sh", "-c", "echo up; read line"], {
      env: { ...process.env, QM_PROBE: "yes" },
      stdin: "pipe",
      stdout: "pipe",
    });
    try {
      await child.stdout.getReader().read();
      expect(linuxProc.environ(child.pid)).toContain("QM_PROBE=yes");
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
  });
});

describe("the process table without blocking", () => {
  test("listAsync reads what list() reads, a slice per turn of the event loop", async () => {
    // One process per slice, so that even a box running a handful shows the turns.
    const sliced = procFs("/proc", 1);
    const sync = new Set(sliced.list().map((e) => e.pid));
    let turns = 0;
    const count = () => {
      turns++;
      if (!done) setImmediate(count);
    };
    let done = false;
    setImmediate(count);
    const listed = await sliced.listAsync!();
    done = true;
    const pids = new Set(listed.map((e) => e.pid));
    expect(pids.has(process.pid)).toBe(true);
    expect(listed.find((e) => e.pid === process.pid)?.ppid).toBe(process.ppid);
    // The box's other processes may come and go between the two reads; most stay.
    const both = [...sync].filter((pid) => pids.has(pid)).length;
    expect(both).toBeGreaterThan(sync.size * 0.8);
    // Yielded between slices: the loop turned once per process read, but the first.
    expect(pids.size).toBeGreaterThan(1);
    expect(turns).toBeGreaterThanOrEqual(pids.size - 1);
  });
});

describe("a /proc table without blocking", () => {
  test("readSliced reads the whole file, yielding after each full slice", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-sliced-"));
    try {
      const path = join(dir, "table");
      const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
      writeFileSync(path, text);
      let turns = 0;
      let done = false;
      const count = () => {
        turns++;
        if (!done) setImmediate(count);
      };
      setImmediate(count);
      const read = await readSliced(path, 64);
      done = true;
      expect(read).toBe(text);
      // 100 lines of 6 – 8 bytes in 64-byte slices: the loop turned between them.
      expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / 64) - 1);
      expect(await readSliced(join(dir, "missing"))).toBe("");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("listenersAsync finds what listeners() finds", async () => {
    const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    listeners.push(l);
    const sync = linuxProc.listeners().filter((x) => x.port === l.port);
    const sliced = procFs("/proc").listenersAsync!;
    expect((await sliced()).filter((x) => x.port === l.port)).toEqual(sync);
    expect(sync).toHaveLength(1);
  });
});
