/**
 * Memory a demo model holds (`qm demo-upstream --vram-mb N`): the flags, which card a placed
 * process means, the simulated holder and `qm demo-smi` reading it as nvidia-smi would (parsed by
 * qm's own parsers), and the real path failing with a message naming libcuda.so.1 on a box
 * without the NVIDIA driver.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DemoSmiOptions,
  demoCardUuid,
  HIDDEN_PID_OFFSET,
  parseDemoSmi,
  simulate,
} from "../../src/cli/selftest/demo-smi.ts";
import { cudaAvailable } from "../../src/demo/cuda.ts";
import { parseDemoFlags } from "../../src/demo/flags.ts";
import { visibleCard } from "../../src/demo/vram.ts";
import {
  COMPUTE_APPS_FIELDS,
  GPU_QUERY_FIELDS,
  parseComputeApps,
  parseGpuQuery,
} from "../../src/gpu/index.ts";
import { demoArgv } from "../support/demo-model.ts";

const procs: Bun.Subprocess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});

describe("--vram-mb flags", () => {
  test("N MiB on device I (default 0); 0, a device alone, or junk are usage errors", () => {
    expect(parseDemoFlags(["--vram-mb", "512"])).toMatchObject({
      kind: "run",
      options: { vramMb: 512 },
    });
    expect(parseDemoFlags(["--vram-mb=64", "--vram-device=1"])).toMatchObject({
      kind: "run",
      options: { vramMb: 64, vramDevice: 1 },
    });
    expect(parseDemoFlags(["--vram-mb", "0"])).toEqual({
      kind: "error",
      message: "--vram-mb must be at least 1",
    });
    expect(parseDemoFlags(["--vram-device", "1"])).toEqual({
      kind: "error",
      message: "--vram-device needs --vram-mb",
    });
    expect(parseDemoFlags(["--vram-mb", "lots"])).toMatchObject({ kind: "error" });
  });

  test("a placed process's device i is the i-th card of CUDA_VISIBLE_DEVICES", () => {
    expect(visibleCard(0, undefined)).toBe(0);
    expect(visibleCard(0, "2,3")).toBe(2);
    expect(visibleCard(1, "2,3")).toBe(3);
    expect(visibleCard(0, "GPU-abc")).toBe(0);
    expect(visibleCard(0, "")).toBe(0);
  });
});

const options = (over: Partial<DemoSmiOptions>): DemoSmiOptions => ({
  dir: null,
  cards: 1,
  totalMib: 24576,
  baseMib: 0,
  releaseLagMs: 0,
  hidePids: false,
  from: null,
  query: "gpu",
  ...over,
});

describe("qm demo-smi", () => {
  test("answers exactly the probe's two queries; anything else the way nvidia-smi refuses it", () => {
    const fmt = "--format=csv,noheader,nounits";
    expect(parseDemoSmi(["--dir", "/x", `--query-gpu=${GPU_QUERY_FIELDS}`, fmt])).toMatchObject({
      ok: true,
      options: { dir: "/x", query: "gpu" },
    });
    expect(
      parseDemoSmi([
        "--dir",
        "/x",
        "--cards",
        "2",
        "--hide-pids",
        `--query-compute-apps=${COMPUTE_APPS_FIELDS}`,
        fmt,
      ]),
    ).toMatchObject({ ok: true, options: { cards: 2, hidePids: true, query: "apps" } });
    expect(parseDemoSmi(["--dir", "/x", "--query-gpu=name", fmt])).toEqual({
      ok: false,
      message: 'Field "name" is not a valid field to query.',
    });
    expect(parseDemoSmi(["--dir", "/x", `--query-gpu=${GPU_QUERY_FIELDS}`])).toMatchObject({
      ok: false,
    });
    expect(parseDemoSmi([`--query-gpu=${GPU_QUERY_FIELDS}`, fmt])).toMatchObject({ ok: false });
  });

  test("a live holder is listed on its card and counted; a gone one lingers for the lag, unlisted", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-demo-smi-"));
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ mib: 2048, card: 1 }));
    // A pid no process can have: gone since the first look.
    const dead = HIDDEN_PID_OFFSET + 7;
    writeFileSync(join(dir, `${dead}.json`), JSON.stringify({ mib: 1024, card: 0 }));
    const o = options({ dir, cards: 2, baseMib: 512, releaseLagMs: 1000 });
    const gpus = parseGpuQuery(simulate(o, 10_000));
    expect(gpus).toMatchObject({
      ok: true,
      value: [
        { index: 0, uuid: demoCardUuid(0), usedMib: 512 + 1024, freeMib: 24576 - 1536 },
        { index: 1, uuid: demoCardUuid(1), usedMib: 512 + 2048 },
      ],
    });
    expect(parseComputeApps(simulate({ ...o, query: "apps" }, 10_500))).toEqual({
      ok: true,
      value: [{ pid: process.pid, gpuUuid: demoCardUuid(1), usedMib: 2048 }],
    });
    // Past the lag: forgotten, its file removed.
    expect(simulate(o, 11_000)).toContain(`0, ${demoCardUuid(0)}, qm demo GPU, 24576, 512, 24064`);
    expect(existsSync(join(dir, `${dead}.json`))).toBe(false);
    // A holder that let go says so itself: lingering from then, even while it still runs.
    writeFileSync(
      join(dir, `${process.pid}.json`),
      JSON.stringify({ mib: 2048, card: 1, goneAt: 20_000 }),
    );
    expect(simulate({ ...o, query: "apps" }, 20_100)).toBe("");
    expect(simulate(o, 20_100)).toContain(`1, ${demoCardUuid(1)}, qm demo GPU, 24576, 2560,`);
  });

  test("--hide-pids lists every process under a pid above pid_max (a PID namespace)", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-demo-smi-"));
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ mib: 100, card: 0 }));
    const text = simulate(options({ dir, hidePids: true, query: "apps" }));
    expect(text).toBe(`${process.pid + HIDDEN_PID_OFFSET}, ${demoCardUuid(0)}, 100\n`);
  });
});

describe("a demo model holding memory", () => {
  test("simulated: written down while it runs, marked let go of when it stops", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-demo-vram-"));
    const p = Bun.spawn(demoArgv("--vram-mb", "300", "--vram-device", "1"), {
      env: { ...process.env, QM_DEMO_VRAM_DIR: dir, CUDA_VISIBLE_DEVICES: "4,5" },
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
    procs.push(p);
    const reader = p.stdout.getReader();
    let text = "";
    while (!text.includes("listening on")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain("holding 300 MiB of GPU memory on device 5 (simulated)");
    const file = join(dir, `${p.pid}.json`);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ mib: 300, card: 5 });
    p.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({
      mib: 300,
      card: 5,
      goneAt: expect.any(Number),
    });
  });

  test.skipIf(cudaAvailable())(
    "real, without the NVIDIA driver: exit 1 naming libcuda.so.1",
    async () => {
      const p = Bun.spawn(demoArgv("--vram-mb", "64"), {
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      });
      procs.push(p);
      expect(await p.exited).toBe(1);
      const err = await new Response(p.stderr).text();
      expect(err).toContain("cannot hold 64 MiB of GPU memory: cannot load libcuda.so.1");
      expect(await new Response(p.stdout).text()).not.toContain("listening on");
    },
  );
});
