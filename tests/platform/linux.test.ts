/**
 * The Linux platform on a recorded /proc (a folder laid out like it): memory, the nohup mask,
 * which group members still run, the parent-death wrapper, and the signal-mask reading both
 * platforms share.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { linuxPlatform } from "../../src/platform/linux/index.ts";
import { parseMeminfo } from "../../src/platform/linux/meminfo.ts";
import { ignoredInStatus, vmRssInStatus } from "../../src/platform/linux/signals.ts";
import { maskHas } from "../../src/platform/signal-mask.ts";
import { FIXTURES, fixture } from "./recorded.ts";

const KIB = 1024;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `/proc/PID/stat` with the fields qm reads: state, ppid, pgrp, session, start (field 22). */
function stat(pid: number, comm: string, state: string, pgrp: number, start: number): string {
  const rest = Array.from({ length: 15 }, () => "0");
  return `${pid} (${comm}) ${state} 1 ${pgrp} ${pgrp} ${rest.join(" ")} ${start} 0\n`;
}

/** A /proc of three processes: a model (10) running, its group's zombie (11), a zombie group (20). */
function recordedProc(): string {
  const root = mkdtempSync(join(tmpdir(), "qm-proc-"));
  dirs.push(root);
  mkdirSync(join(root, "self"));
  copyFileSync(join(FIXTURES, "linux/status-nohup.txt"), join(root, "self/status"));
  copyFileSync(join(FIXTURES, "linux/meminfo.txt"), join(root, "meminfo"));
  for (const [pid, comm, state, pgrp] of [
    [10, "llama-server", "S", 10],
    [11, "worker", "Z", 10],
    [20, "gone", "Z", 20],
  ] as const) {
    mkdirSync(join(root, String(pid)));
    writeFileSync(join(root, String(pid), "stat"), stat(pid, comm, state, pgrp, 5000 + pid));
  }
  return root;
}

describe("/proc/meminfo", () => {
  test("every field in bytes (kB is KiB); counts without a unit as written", () => {
    const m = parseMeminfo(fixture("linux/meminfo.txt"));
    expect(m.get("MemTotal")).toBe(131810188 * KIB);
    expect(m.get("MemAvailable")).toBe(118244500 * KIB);
    expect(m.get("Active(anon)")).toBe(10215960 * KIB);
    expect(m.get("HugePages_Total")).toBe(0);
    expect(m.get("Hugepagesize")).toBe(2048 * KIB);
    expect(parseMeminfo("garbage\n").size).toBe(0);
  });
});

describe("signal masks", () => {
  test("bit N−1 for signal N, in a mask of any length", () => {
    expect(maskHas("0000000001001001", "SIGHUP")).toBe(true);
    expect(maskHas("0000000001001000", "SIGHUP")).toBe(false);
    expect(maskHas("       1\n", "SIGHUP")).toBe(true); // ps pads it
    expect(maskHas("3", "SIGHUP")).toBe(true);
    expect(maskHas("", "SIGHUP")).toBe(false);
    expect(maskHas("zz", "SIGHUP")).toBe(false);
  });

  test("VmRSS of a status file in bytes; none (a kernel thread) is null", () => {
    expect(vmRssInStatus("Name:\tx\nVmRSS:\t  2048 kB\n")).toBe(2 * 1024 * 1024);
    expect(vmRssInStatus("Name:\tkthreadd\n")).toBeNull();
  });

  test("SigIgn of a recorded /proc/PID/status under nohup", () => {
    expect(ignoredInStatus(fixture("linux/status-nohup.txt"), "SIGHUP")).toBe(true);
    expect(ignoredInStatus("Name:\tqm\nSigIgn:\t0000000000000000\n", "SIGHUP")).toBe(false);
  });
});

describe("the Linux platform on a recorded /proc", () => {
  test("memory totals and every meminfo field, for the GPU probe on unified boxes", () => {
    const linux = linuxPlatform({ root: recordedProc() });
    expect(linux.memory()).toEqual({
      totalBytes: 131810188 * KIB,
      availableBytes: 118244500 * KIB,
    });
    expect(linux.memInfo()?.get("MemTotal")).toBe(131810188 * KIB);
    expect(linux.unifiedGpuBudget()).toBeNull();
  });

  test("a process's resident memory from its status; gone or without VmRSS: null", () => {
    const root = recordedProc();
    writeFileSync(join(root, "10", "status"), "Name:\tllama-server\nVmRSS:\t  4096 kB\n");
    writeFileSync(join(root, "11", "status"), "Name:\tworker\nState:\tZ (zombie)\n");
    const linux = linuxPlatform({ root });
    expect(linux.residentBytes(10)).toBe(4096 * KIB);
    expect(linux.residentBytes(11)).toBeNull();
    expect(linux.residentBytes(99)).toBeNull();
  });

  test("a group runs while a member does; zombies alone do not count", () => {
    const linux = linuxPlatform({ root: recordedProc() });
    expect(linux.groupRunning(10)).toBe(true);
    expect(linux.groupRunning(20)).toBe(false);
    expect(linux.groupRunning(30)).toBe(false);
    // No /proc at all: kill(2) decides.
    expect(linuxPlatform({ root: join(tmpdir(), "qm-no-proc-here") }).groupRunning(10)).toBe(true);
  });

  test("started under nohup: SIGHUP ignored; no status readable: not", () => {
    expect(linuxPlatform({ root: recordedProc() }).signalIgnored("SIGHUP")).toBe(true);
    const bare = linuxPlatform({ root: join(tmpdir(), "qm-no-proc-here") });
    expect(bare.signalIgnored("SIGHUP")).toBe(false);
    expect(bare.memory()).toBeNull();
  });

  test("the death watch where there is a shell for it", () => {
    const withShell = linuxPlatform({ shell: "/bin/sh" });
    expect(withShell.deathWatch).toBe(true);
    expect(withShell.report()).toMatchObject({ deathWatch: true });
    const without = linuxPlatform({ shell: join(tmpdir(), "qm-no-shell-here"), arch: "arm64" });
    expect(without.deathWatch).toBe(false);
    expect(without.report()).toMatchObject({ name: "linux-arm64", deathWatch: false });
    expect(without.portHint(8080)).toBe("ss -ltnp 'sport = :8080'");
  });

  test("the process table of a recorded /proc: entries with their start times", () => {
    const linux = linuxPlatform({ root: recordedProc() });
    expect(linux.procs.available).toBe(true);
    expect(linux.procs.listenersComplete).toBe(true);
    expect(linux.procs.entry(10)).toEqual({
      pid: 10,
      ppid: 1,
      pgrp: 10,
      session: 10,
      state: "S",
      start: 5010,
      comm: "llama-server",
    });
    expect(
      linux.procs
        .list()
        .map((e) => e.pid)
        .sort(),
    ).toEqual([10, 11, 20]);
  });
});
