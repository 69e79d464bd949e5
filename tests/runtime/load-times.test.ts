import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LoadTimes } from "../../src/runtime/load-times.ts";

let now = 0;
const clock = () => now;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** One load of `id` that takes `ms`. */
function load(t: LoadTimes, id: string, ms: number, end = "ready") {
  t.state(id, "starting");
  now += ms;
  t.state(id, end);
}

test("a load is measured from starting to ready; progress while it runs; the median is expected", () => {
  const t = new LoadTimes(clock);
  expect(t.progress("m")).toBeNull();
  t.state("m", "starting");
  now += 500;
  expect(t.progress("m")).toEqual({
    elapsedMs: 500,
    expectedMs: null,
    progress: null,
    stage: null,
  });
  now += 1500;
  t.state("m", "ready");
  expect([t.progress("m"), t.last("m"), t.expected("m")]).toEqual([null, 2000, 2000]);
  load(t, "m", 9000);
  load(t, "m", 3000);
  expect(t.expected("m")).toBe(3000);
  load(t, "m", 4000);
  expect(t.expected("m")).toBe(3500);
  // A load that fails is not a measurement.
  load(t, "m", 60_000, "failed");
  expect([t.last("m"), t.expected("m")]).toEqual([4000, 3500]);
  // Only the last five count.
  for (let i = 0; i < 5; i++) load(t, "m", 100);
  expect(t.expected("m")).toBe(100);
  t.state("m", "starting");
  now += 50;
  expect(t.progress("m")).toEqual({ elapsedMs: 50, expectedMs: 100, progress: 0.5, stage: null });
});

test("kept across restarts in its file; a broken file starts afresh; a write failure is reported", async () => {
  const dir = mkdtempSync(join(tmpdir(), "qm-loads-"));
  dirs.push(dir);
  const file = join(dir, "state", "load-times.json");
  const first = new LoadTimes(clock, file);
  load(first, "m", 1200);
  load(first, "org/x", 800);
  await first.flushed();
  expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ m: [1200], "org/x": [800] });
  expect(new LoadTimes(clock, file).expected("m")).toBe(1200);
  writeFileSync(file, '{"m": "not a list", "n": [5, -1, "x", 7]}');
  const read = new LoadTimes(clock, file);
  expect([read.expected("m"), read.expected("n")]).toEqual([null, 6]);
  writeFileSync(file, "{not json");
  expect(new LoadTimes(clock, file).expected("m")).toBeNull();
  const errors: unknown[] = [];
  const blocked = new LoadTimes(clock, join(file, "under-a-file.json"), (e) => errors.push(e));
  load(blocked, "m", 10);
  await blocked.flushed();
  expect(errors).toHaveLength(1);
});
