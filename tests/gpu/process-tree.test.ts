import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseStat, procTree, treeFromChildren } from "../../src/gpu/process-tree.ts";

test("parseStat reads ppid, pgrp and session after the last ')' of comm", () => {
  expect(parseStat("4242 (llama (server) x) S 17 4242 4242 0 -1 4194560 ...")).toEqual({
    ppid: 17,
    pgrp: 4242,
    session: 4242,
  });
  expect(parseStat("garbage")).toBeNull();
  expect(parseStat("1 (x) S a b c")).toBeNull();
});

test("treeFromChildren: descendants of every root, cycles harmless", async () => {
  const kids: Record<number, number[]> = { 1: [2, 3], 2: [4], 4: [1], 9: [10] };
  const tree = treeFromChildren((pid) => kids[pid] ?? []);
  expect([...(await tree([1]))].sort()).toEqual([1, 2, 3, 4]);
  expect([...(await tree([]))]).toEqual([]);
  expect([...(await tree([2, 9]))].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 9, 10]);
});

describe("procTree over a recorded /proc", () => {
  let proc: string;
  const stat = (pid: number, ppid: number, pgrp: number, sid: number, comm = "x") =>
    `${pid} (${comm}) S ${ppid} ${pgrp} ${sid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0\n`;

  beforeAll(async () => {
    proc = await mkdtemp(join(tmpdir(), "qm-proc-"));
    const entries: [number, string][] = [
      [1, stat(1, 0, 1, 1, "init")],
      [100, stat(100, 1, 100, 100, "llama-server")], // a model qm started (setsid)
      [101, stat(101, 100, 100, 100, "sh")],
      [102, stat(102, 101, 102, 100, "python3 vllm")],
      [200, stat(200, 1, 200, 100, "daemon")], // double-forked: re-parented to init, same session
      [300, stat(300, 1, 300, 300, "Xorg")],
      [301, stat(301, 300, 300, 300, "game")],
      [500, "garbled"],
    ];
    for (const [pid, text] of entries) {
      await mkdir(join(proc, String(pid)));
      await writeFile(join(proc, String(pid), "stat"), text);
    }
    await mkdir(join(proc, "400")); // exited between readdir and read: no stat
    await mkdir(join(proc, "self"));
  });

  afterAll(async () => {
    await rm(proc, { recursive: true, force: true });
  });

  test("descendants by parent, plus members of the root's session or group", async () => {
    const ours = await procTree(proc)([100]);
    expect([...ours].sort((a, b) => a - b)).toEqual([100, 101, 102, 200]);
  });

  test("no roots, or no /proc: just the roots", async () => {
    expect([...(await procTree(proc)([]))]).toEqual([]);
    expect([...(await procTree(join(proc, "missing"))([7]))]).toEqual([7]);
  });
});

test.if(existsSync("/proc/self/stat"))("the real /proc sees a child of this process", async () => {
  const child = Bun.spawn(["sleep", "30"], { stdout: "ignore" });
  try {
    const ours = await procTree()([process.pid]);
    expect(ours.has(child.pid)).toBe(true);
  } finally {
    child.kill("SIGKILL");
    await child.exited;
  }
});
