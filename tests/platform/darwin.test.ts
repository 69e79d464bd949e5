/**
 * The Darwin platform on recorded outputs of a Mac (tests/fixtures/platform/darwin/): the
 * parsers of `ps`, `lsof` and `sysctl`, then the platform as qm's supervision uses it — the
 * process tree of a running model, who holds a port, reaping what a killed qm left, the
 * unified-memory budget — all without a Mac.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { darwinPlatform } from "../../src/platform/darwin/index.ts";
import { isLocalHost, parseLsof } from "../../src/platform/darwin/lsof.ts";
import { parseLstart, parsePs, parsePsEnvironment } from "../../src/platform/darwin/ps.ts";
import { parseSysctl, unifiedBudget } from "../../src/platform/darwin/sysctl.ts";
import { listenerOwnership, portBusy } from "../../src/process/port-guard.ts";
import { portHolder } from "../../src/process/port-holder.ts";
import { type RunFile, reapStale, runDir } from "../../src/process/run-record.ts";
import { TreeWatch } from "../../src/process/tree-watch.ts";
import { captureLogger } from "../process/support.ts";
import { fixture, macAfterCrash, macRunningCoder, RecordedCommands } from "./recorded.ts";

const GIB = 1024 ** 3;
/** `lstart` of qm (4100) and of its model's leader (4188), in seconds since the epoch (UTC). */
const QM_START = 1741079702;
const LEADER_START = 1741079709;

describe("ps", () => {
  test("every process of `ps -ax -o pid=,ppid=,pgid=,stat=,lstart=,comm=`, comm after its last /", () => {
    const all = parsePs(fixture("darwin/ps-ax.txt"));
    expect(all.map((e) => e.pid)).toEqual([
      1, 88, 97, 412, 733, 901, 2210, 3301, 4100, 4188, 4190, 4195, 4197, 4230,
    ]);
    expect(all.find((e) => e.pid === 4188)).toEqual({
      pid: 4188,
      ppid: 4100,
      pgrp: 4188,
      session: 4188, // no session id on Darwin: the group stands in
      state: "S",
      start: LEADER_START,
      comm: "llama-server",
    });
    // A path with spaces and parentheses; a login shell; a zombie.
    expect(all.find((e) => e.pid === 901)?.comm).toBe("Google Chrome Helper (Renderer)");
    expect(all.find((e) => e.pid === 3301)?.comm).toBe("-zsh");
    expect(all.find((e) => e.pid === 4197)?.state).toBe("Z");
  });

  test("lstart (C locale, UTC) reads as seconds since the epoch; anything else is null", () => {
    expect(parseLstart("Tue Mar  4 09:15:02 2025")).toBe(QM_START);
    expect(parseLstart("Sat Dec 31 23:59:59 2022")).toBe(Date.UTC(2022, 11, 31, 23, 59, 59) / 1000);
    expect(parseLstart("Mar  4 09:15:02 2025")).toBeNull();
    expect(parseLstart("Tue Foo  4 09:15:02 2025")).toBeNull();
    expect(parseLstart("")).toBeNull();
  });

  test("a header, a cut line or an error message is skipped, not misread", () => {
    const text = [
      "  PID  PPID  PGID STAT STARTED                      COMM",
      " 4188  4100  4188 Ss   Tue Mar  4 09:15",
      "ps: illegal option -- E",
      " 4190  4188  4188 S    Tue Mar  4 09:15:10 2025     /opt/homebrew/bin/llama-server",
    ].join("\n");
    expect(parsePs(text).map((e) => e.pid)).toEqual([4190]);
  });

  test("`ps -axwwE -o pid=,command=`: each process's words, its environment among them", () => {
    const env = parsePsEnvironment(fixture("darwin/ps-env.txt"));
    expect(env.get(4188)).toContain(`QM_OWNER=4100:${QM_START}`);
    expect(env.get(4188)).toContain("QM_MODEL=coder");
    expect(env.get(1)).toEqual(["/sbin/launchd"]);
    expect(env.get(4999)).toBeUndefined();
  });
});

describe("lsof", () => {
  test("`lsof -Fpcfn`: each listening socket with its process, descriptor, address and port", () => {
    expect(parseLsof(fixture("darwin/lsof-listen.txt"))).toEqual([
      { pid: 733, comm: "Google Chrome", fd: "58", host: "127.0.0.1", port: 9222 },
      { pid: 2210, comm: "nginx", fd: "6", host: "*", port: 80 },
      { pid: 2210, comm: "nginx", fd: "7", host: "*", port: 80 },
      { pid: 4100, comm: "qm", fd: "18", host: "127.0.0.1", port: 8080 },
      { pid: 4100, comm: "qm", fd: "19", host: "[::1]", port: 9090 },
      { pid: 4188, comm: "llama-server", fd: "3", host: "127.0.0.1", port: 10001 },
      { pid: 4195, comm: "kv-helper", fd: "4", host: "192.168.1.20", port: 7070 },
    ]);
    expect(parseLsof("")).toEqual([]); // lsof exits 1 with nothing when no socket matched
  });

  test("loopback and wildcard addresses are what a 127.0.0.1 URL reaches", () => {
    for (const host of [
      "*",
      "127.0.0.1",
      "127.9.9.9",
      "[::1]",
      "[::]",
      "0.0.0.0",
      "[::ffff:127.0.0.1]",
    ]) {
      expect({ host, local: isLocalHost(host) }).toEqual({ host, local: true });
    }
    for (const host of ["192.168.1.20", "[fe80::1%en0]", "10.0.0.127", "[2001:db8::1]"]) {
      expect({ host, local: isLocalHost(host) }).toEqual({ host, local: false });
    }
  });
});

describe("sysctl: the GPU's share of unified memory", () => {
  const budget = (file: string) => unifiedBudget(parseSysctl(fixture(`darwin/${file}`)));

  test("Metal's default: 2/3 of RAM up to 36 GiB, 3/4 above", () => {
    expect(budget("sysctl-m1-16g.txt")).toEqual({
      bytes: Math.floor((16 * GIB * 2) / 3),
      ramBytes: 16 * GIB,
      source: "default",
    });
    expect(budget("sysctl-m3max-36g.txt")).toEqual({
      bytes: 24 * GIB,
      ramBytes: 36 * GIB,
      source: "default",
    });
    expect(budget("sysctl-m2max-64g.txt")).toEqual({
      bytes: 48 * GIB,
      ramBytes: 64 * GIB,
      source: "default",
    });
  });

  test("iogpu.wired_limit_mb, when set, is the limit; before macOS 14 (no such name) the default", () => {
    expect(budget("sysctl-m2ultra-192g-wired.txt")).toEqual({
      bytes: 180000 * 1024 * 1024,
      ramBytes: 192 * GIB,
      source: "iogpu.wired_limit_mb",
    });
    expect(budget("sysctl-m1-macos13.txt")).toEqual({
      bytes: Math.floor((32 * GIB * 2) / 3),
      ramBytes: 32 * GIB,
      source: "default",
    });
  });

  test("an Intel Mac (its GPU has its own memory), or no RAM size: none", () => {
    expect(budget("sysctl-intel-32g.txt")).toBeNull();
    expect(unifiedBudget(parseSysctl(""))).toBeNull();
    expect(unifiedBudget(parseSysctl("hw.optional.arm64: 1\n"))).toBeNull();
  });
});

describe("the Darwin platform on a recorded Mac", () => {
  test("the process table: the list, one entry, a pid that is gone", () => {
    const { procs } = darwinPlatform({ commands: macRunningCoder() });
    expect(procs.available).toBe(true);
    expect(procs.listenersComplete).toBe(false);
    expect(procs.list()).toHaveLength(14);
    expect(procs.entry(4188)).toMatchObject({ pid: 4188, start: LEADER_START });
    expect(procs.entry(4999)).toBeNull();
  });

  test("environments: one `ps -E` for all of them after each reading of the table", () => {
    const run = macRunningCoder();
    const { procs } = darwinPlatform({ commands: run });
    procs.list();
    expect(procs.environ(4195)).toContain("QM_MODEL=coder");
    expect(procs.environ(4188)).toContain(`QM_OWNER=4100:${QM_START}`);
    expect(procs.environ(88)).toBeNull(); // another user's (root's): ps shows none
    expect(run.asked.filter((l) => l.includes("-axwwE"))).toHaveLength(1);
    procs.list();
    procs.environ(4188);
    expect(run.asked.filter((l) => l.includes("-axwwE"))).toHaveLength(2);
  });

  test("who holds a port: lsof's socket, the process from ps", () => {
    const { procs } = darwinPlatform({ commands: macRunningCoder() });
    expect(portHolder(10001, procs)).toEqual({
      pid: 4188,
      comm: "llama-server",
      start: LEADER_START,
    });
    expect(portHolder(7070, procs)?.pid).toBe(4195); // any address, for a listener qm cannot bind
    expect(portHolder(5555, procs)).toBeNull();
    expect(procs.socketInodes(4100)).toEqual(new Set(["4100/18", "4100/19"]));
  });

  test("without lsof: no holder named, nothing else breaks", () => {
    const run = macRunningCoder();
    run.set("lsof -nP -w -iTCP -sTCP:LISTEN -Fpcfn", "missing");
    run.set("lsof -v", "missing");
    const mac = darwinPlatform({ commands: run });
    expect(portHolder(10001, mac.procs)).toBeNull();
    expect(mac.report().portHolders).toBe(false);
  });

  test("a port is judged free by binding it (lsof sees only this user's sockets)", () => {
    const { procs } = darwinPlatform({ commands: macRunningCoder() });
    const asked: number[] = [];
    const bindable = (port: number) => {
      asked.push(port);
      return port !== 10001;
    };
    expect(portBusy(10001, { fs: procs, bindable })).toBe(true);
    expect(portBusy(10002, { fs: procs, bindable })).toBe(false);
    expect(asked).toEqual([10001, 10002]);
  });

  test("after the health check: the model's own listener, or a stranger that was there first", () => {
    const { procs } = darwinPlatform({ commands: macRunningCoder() });
    const probe = { fs: procs, bindable: () => true };
    expect(listenerOwnership(10001, [4188, 4190], LEADER_START, probe)).toEqual({ kind: "ours" });
    // Chrome's debugger port, held since the day before the model started.
    expect(listenerOwnership(9222, [4188, 4190], LEADER_START, probe)).toEqual({
      kind: "foreign",
      holder: { pid: 733, comm: "Google Chrome", start: Date.UTC(2025, 2, 3, 8, 15, 40) / 1000 },
    });
  });

  test("a model's tree from ps: its group, a grandchild that left it, not its zombie", () => {
    const kills: string[] = [];
    const mac = darwinPlatform({ commands: macRunningCoder() });
    const watch = new TreeWatch({
      fs: mac.procs,
      self: { pid: 4100, start: QM_START },
      kill: (pid, signal) => kills.push(`${signal} ${pid}`),
      reap: (pid) => mac.reapChild(pid),
      spawned: () => [4188],
      scanIntervalMs: 1e9,
    });
    expect(watch.register("coder", 4188, 10001)).toEqual({ pid: 4188, start: LEADER_START });
    watch.scan();
    expect(watch.snapshot()[0]!.descendants).toEqual([
      { pid: 4190, start: LEADER_START + 1 },
      { pid: 4195, start: LEADER_START + 2 },
    ]);
    // The group signal reaches 4190; the one that called setsid is signalled by pid.
    expect(watch.signal(4188, "SIGTERM", { outsideGroup: true })).toBe(1);
    expect(kills).toEqual(["SIGTERM 4195"]);
    watch.unregister(4188);
  });

  test("the next qm reaps what a killed one left: listed processes and marked ones, not a reused pid", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-darwin-run-"));
    mkdirSync(runDir(dir), { recursive: true });
    const file: RunFile = {
      qm: { pid: 4100, start: QM_START },
      models: [
        {
          model: "coder",
          port: 10001,
          leader: { pid: 4188, start: LEADER_START },
          // 901 was one of its pids once; it is Chrome's now (another start time).
          descendants: [
            { pid: 4190, start: LEADER_START + 1 },
            { pid: 901, start: LEADER_START + 30 },
          ],
        },
      ],
    };
    writeFileSync(join(runDir(dir), "4100.json"), JSON.stringify(file));
    const mac = darwinPlatform({ commands: macAfterCrash() });
    const cap = captureLogger();
    const killed: number[] = [];
    const reaped = reapStale(dir, {
      fs: mac.procs,
      self: { pid: 4301, start: Date.UTC(2025, 2, 4, 9, 21, 30) / 1000 },
      kill: (pid) => killed.push(pid),
      log: cap.log,
    });
    // 4195 left the group and was started after qm's last scan: found by its QM_OWNER mark.
    expect(killed).toEqual([4188, 4190, 4195]);
    expect(reaped.map((r) => [r.pid, r.comm, r.model])).toEqual([
      [4188, "llama-server", "coder"],
      [4190, "llama-server", "coder"],
      [4195, "kv-helper", "coder"],
    ]);
    expect(cap.lines.join("\n")).toContain("left running by qm pid 4100, which is gone");
    expect(readdirSync(runDir(dir))).toEqual([]);
  });

  test("no subreaper or death watch: said, not pretended; groups are trusted to kill(2)", () => {
    const mac = darwinPlatform({ commands: macRunningCoder(), arch: "arm64" });
    expect(mac.becomeSubreaper()).toMatchObject({ ok: false, byDesign: true });
    expect(mac.reapChild(4197)).toBe(false);
    expect(mac.deathWatch).toBe(false);
    expect(mac.groupRunning(4188)).toBe(true);
    expect(mac.portHint(8080)).toBe("lsof -nP -iTCP:8080 -sTCP:LISTEN");
    expect(mac.report()).toEqual({
      name: "darwin-arm64",
      subreaper: false,
      deathWatch: false,
      processTable: true,
      portHolders: true,
    });
  });

  test("memory: hw.memsize, and the unified budget of an M2 Max with 64 GiB", () => {
    const mac = darwinPlatform({ commands: macRunningCoder() });
    expect(mac.memory()).toEqual({ totalBytes: 64 * GIB, availableBytes: null });
    expect(mac.memInfo()).toBeNull();
    expect(mac.unifiedGpuBudget()).toEqual({
      bytes: 48 * GIB,
      ramBytes: 64 * GIB,
      source: "default",
    });
  });

  test("nohup: SIGHUP in the ignored-signal mask of `ps -o sigignore`", () => {
    const run = new RecordedCommands({
      "ps -o sigignore= -p 4100": { file: "darwin/ps-sigignore-nohup.txt" },
      "ps -o sigignore= -p 4101": { file: "darwin/ps-sigignore.txt" },
      "ps -o sigignore= -p 4102": "missing",
    });
    const ignored = (pid: number) => darwinPlatform({ commands: run, pid }).signalIgnored("SIGHUP");
    expect([ignored(4100), ignored(4101), ignored(4102)]).toEqual([true, false, false]);
  });
});
