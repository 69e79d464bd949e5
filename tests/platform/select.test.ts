/**
 * Choosing the platform, and the Darwin readers run against this box's own `ps` and `lsof`
 * (procps and lsof print the formats macOS's do for these options), so the parsers meet real
 * output and not only recordings.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { realCommands } from "../../src/platform/command.ts";
import { darwinProcs } from "../../src/platform/darwin/index.ts";
import { platform, platformFor } from "../../src/platform/index.ts";
import { portHolder } from "../../src/process/port-holder.ts";

describe("choosing the platform", () => {
  test("once, from process.platform; another can be built for a test", () => {
    expect(platform.name).toBe(process.platform);
    expect(platformFor("linux").name).toBe("linux");
    expect(platformFor("darwin").name).toBe("darwin");
  });

  test("a system qm has no reader for: nothing read, nothing pretended", () => {
    const bsd = platformFor("freebsd", { arch: "x64" });
    expect(bsd.procs.available).toBe(false);
    expect(bsd.procs.list()).toEqual([]);
    expect(bsd.becomeSubreaper()).toMatchObject({ ok: false, byDesign: true });
    expect(bsd.deathWatch).toBe(false);
    expect(bsd.groupRunning(10)).toBe(true);
    expect(bsd.memory()).toBeNull();
    expect(bsd.unifiedGpuBudget()).toBeNull();
    expect(bsd.report()).toEqual({
      name: "freebsd-x64",
      subreaper: false,
      deathWatch: false,
      processTable: false,
      portHolders: false,
    });
  });
});

const listeners: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const l of listeners.splice(0)) l.stop(true);
});

const tools = Bun.which("ps") !== null && Bun.which("lsof") !== null;

describe.if(tools && process.platform === "linux")(
  "the Darwin readers on this box's own ps and lsof",
  () => {
    test("this process in the table, with a start time before now", () => {
      const procs = darwinProcs(realCommands);
      expect(procs.available).toBe(true);
      const me = procs.entry(process.pid)!;
      expect(me).toMatchObject({ pid: process.pid, ppid: process.ppid });
      expect(me.start).toBeLessThanOrEqual(Date.now() / 1000);
      expect(me.start).toBeGreaterThan(Date.now() / 1000 - 86400);
      expect(procs.list().some((e) => e.pid === process.pid && e.start === me.start)).toBe(true);
    });

    test("the holder of a port this process listens on", () => {
      const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
      listeners.push(l);
      const procs = darwinProcs(realCommands);
      const mine = procs.listeners().filter((x) => x.port === l.port);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.local).toBe(true);
      expect(portHolder(l.port, procs)?.pid).toBe(process.pid);
    });
  },
);
