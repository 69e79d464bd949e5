/**
 * The run file a qm keeps, and what the next qm does with a dead one's: kill what is still
 * the same process (pid and start time), spare a reused pid, leave a live qm's file alone.
 */
import { afterEach, describe, expect, test } from "bun:test";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { platform } from "../../src/platform/index.ts";
import { type RunFile, RunRecord, reapStale, runDir } from "../../src/process/run-record.ts";
import { FakeProc } from "../support/fake-proc.ts";
import { alive, captureLogger } from "./support.ts";

const SELF = { pid: 100, start: 5 };
const sleepers: Bun.Subprocess[] = [];

afterEach(async () => {
  for (const p of sleepers.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});

function stateDir(files: RunFile[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), "qm-run-"));
  mkdirSync(runDir(dir), { recursive: true });
  for (const f of files) {
    writeFileSync(join(runDir(dir), `${f.qm.pid}.json`), JSON.stringify(f));
  }
  return dir;
}

const runFile = (qm: { pid: number; start: number }, pids: [number, number][]): RunFile => ({
  qm,
  models: [
    {
      model: "m",
      port: 9001,
      leader: { pid: pids[0]![0], start: pids[0]![1] },
      descendants: pids.slice(1).map(([pid, start]) => ({ pid, start })),
    },
  ],
});

function fakeReap(fs: FakeProc, dir: string) {
  const cap = captureLogger();
  const kills: number[] = [];
  const reaped = reapStale(dir, {
    fs,
    self: SELF,
    kill: (pid) => kills.push(pid),
    log: cap.log,
  });
  return { reaped, kills, lines: cap.lines };
}

describe("RunRecord", () => {
  test("writes aside and renames; close() removes the file", () => {
    const dir = stateDir();
    const { log } = captureLogger();
    const rec = new RunRecord(dir, SELF, log);
    rec.write([{ model: "m", port: 1, leader: { pid: 2, start: 3 }, descendants: [] }]);
    expect(readdirSync(runDir(dir))).toEqual(["100.json"]);
    const back = JSON.parse(readFileSync(rec.path, "utf8")) as RunFile;
    expect(back.qm).toEqual(SELF);
    expect(back.models[0]!.leader).toEqual({ pid: 2, start: 3 });
    rec.close();
    expect(existsSync(rec.path)).toBe(false);
  });
});

describe("reapStale", () => {
  test("a dead qm's processes are killed when their start times match; a reused pid is not", () => {
    const fs = new FakeProc();
    fs.add(201, { start: 50 }); // the leader, still the same process
    fs.add(202, { start: 999 }); // was a descendant; the pid is someone else's now
    fs.add(203, { start: 52, state: "Z" }); // a zombie holds nothing
    const dir = stateDir([
      runFile({ pid: 300, start: 7 }, [
        [201, 50],
        [202, 51],
        [203, 52],
      ]),
    ]);
    const { reaped, kills, lines } = fakeReap(fs, dir);
    expect(kills).toEqual([201]);
    expect(reaped).toEqual([{ model: "m", pid: 201, comm: "p201", port: 9001 }]);
    expect(lines.join("\n")).toContain(
      'reaped pid 201 (p201) of model "m" (port 9001), left running by qm pid 300',
    );
    expect(lines.join("\n")).toContain("pid 202 of model");
    expect(readdirSync(runDir(dir))).toEqual([]);
  });

  test("a qm whose pid now names another process (other start time) counts as dead", () => {
    const fs = new FakeProc();
    fs.add(300, { start: 8 });
    fs.add(201, { start: 50 });
    const dir = stateDir([runFile({ pid: 300, start: 7 }, [[201, 50]])]);
    expect(fakeReap(fs, dir).kills).toEqual([201]);
  });

  test("a live qm's file and processes are left alone", () => {
    const fs = new FakeProc();
    fs.add(300, { start: 7 });
    fs.add(201, { start: 50 });
    const dir = stateDir([runFile({ pid: 300, start: 7 }, [[201, 50]])]);
    expect(fakeReap(fs, dir).kills).toEqual([]);
    expect(readdirSync(runDir(dir))).toEqual(["300.json"]);
  });

  test("a process carrying the dead qm's mark is killed though no scan recorded it", () => {
    const fs = new FakeProc();
    fs.add(201, { start: 50 });
    fs.add(210, { start: 60 }, ["QM_OWNER=300:7", "QM_MODEL=m"]);
    fs.add(211, { start: 61 }, ["QM_OWNER=301:7", "QM_MODEL=m"]); // another qm's
    const dir = stateDir([runFile({ pid: 300, start: 7 }, [[201, 50]])]);
    const { kills, reaped } = fakeReap(fs, dir);
    expect(kills.sort()).toEqual([201, 210]);
    expect(reaped.find((r) => r.pid === 210)).toMatchObject({ model: "m", port: 9001 });
  });

  test("a half-written file of a qm that is gone is removed; a live one's is not", () => {
    const fs = new FakeProc();
    fs.add(43, { start: 9 });
    const dir = stateDir();
    writeFileSync(join(runDir(dir), "42.json.tmp"), "{ half");
    writeFileSync(join(runDir(dir), "43.json.tmp"), "{ being written");
    fakeReap(fs, dir);
    expect(readdirSync(runDir(dir))).toEqual(["43.json.tmp"]);
  });

  test("a file that is not a run file is removed with a warning", () => {
    const dir = stateDir();
    writeFileSync(join(runDir(dir), "42.json"), "{ torn");
    const { kills, lines } = fakeReap(new FakeProc(), dir);
    expect(kills).toEqual([]);
    expect(lines.join("\n")).toContain("not a qm run file");
    expect(readdirSync(runDir(dir))).toEqual([]);
  });

  test("with the real /proc: a real process is killed only while its start time matches", async () => {
    const sleeper = Bun.spawn(["sleep", "30"]);
    sleepers.push(sleeper);
    const start = platform.procs.entry(sleeper.pid)!.start;
    // This test process posing as a dead qm: same pid, another start time.
    const deadQm = { pid: process.pid, start: 1 };
    const real = (file: RunFile) =>
      reapStale(stateDir([file]), {
        fs: platform.procs,
        self: { pid: 1, start: 1 },
        kill: (pid, sig) => process.kill(pid, sig),
        log: captureLogger().log,
      });
    expect(real(runFile(deadQm, [[sleeper.pid, start + 1]]))).toEqual([]);
    expect(alive(sleeper.pid)).toBe(true);
    expect(real(runFile(deadQm, [[sleeper.pid, start]]))).toHaveLength(1);
    expect(await sleeper.exited).not.toBe(0);
    expect(sleeper.signalCode).toBe("SIGKILL");
  });
});
