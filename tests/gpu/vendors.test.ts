/**
 * Every vendor's probe on recorded outputs and fake trees: AMD (sysfs + amd-smi / rocm-smi),
 * unified memory (nvidia-smi `[N/A]` + /proc/meminfo + RSS), NVIDIA in a container (pids that
 * are not qm's), and `"auto"` picking among them by what the box has.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAmdSmiProcesses, parseRocmSmiPids } from "../../src/gpu/amd/parse-processes.ts";
import { readAmdCards } from "../../src/gpu/amd/sysfs.ts";
import { unifiedMemory } from "../../src/gpu/meminfo.ts";
import { probeGpu } from "../../src/gpu/probe.ts";
import { PidTree, treeFromChildren } from "../../src/gpu/process-tree.ts";
import type { GpuInfo } from "../../src/gpu/types.ts";
import { linuxPlatform } from "../../src/platform/linux/index.ts";
import { SMI_FIXTURES } from "./fixtures.ts";

const AMD = join(import.meta.dir, "fixtures/amd");
const GIB = 1024 ** 3;
let root: string;
let n = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "qm-vendors-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function dir(): Promise<string> {
  const d = join(root, String(n++));
  await mkdir(d, { recursive: true });
  return d;
}

/** A fake sysfs: `cards` maps a card number to [total, used] bytes (null: no VRAM files). */
async function sysfs(cards: Record<number, [number, number] | null>, extra: string[] = []) {
  const sys = await dir();
  for (const [num, vram] of Object.entries(cards)) {
    const dev = join(sys, "class/drm", `card${num}`, "device");
    await mkdir(dev, { recursive: true });
    if (vram) {
      await writeFile(join(dev, "mem_info_vram_total"), `${vram[0]}\n`);
      await writeFile(join(dev, "mem_info_vram_used"), `${vram[1]}\n`);
    }
  }
  for (const name of extra) await mkdir(join(sys, "class/drm", name), { recursive: true });
  return sys;
}

/** A script that prints a file (or text) and exits with `code`. */
async function tool(name: string, output: string, code = 0): Promise<string> {
  const path = join(await dir(), name);
  const body = await readFile(output, "utf8").catch(() => output);
  const data = join(path, "..", "out.txt");
  await writeFile(data, body);
  await writeFile(path, `#!/bin/sh\necho "$@" >> "${path}.args"\ncat "${data}"\nexit ${code}\n`);
  await chmod(path, 0o755);
  return path;
}

const missing = () => join(root, "nowhere", "tool");

describe("AMD: sysfs", () => {
  test("cards in card<N> order among those with VRAM files; connectors and iGPUs skipped", async () => {
    const sys = await sysfs({ 0: null, 1: [24 * GIB, 3 * GIB], 2: [16 * GIB, 0] }, [
      "card1-DP-1",
      "renderD128",
    ]);
    const r = await readAmdCards(sys);
    expect(r).toEqual({
      ok: true,
      value: [
        {
          index: 0,
          uuid: "AMD-card1",
          name: "AMD GPU (card1)",
          totalMib: 24576,
          usedMib: 3072,
          freeMib: 21504,
        },
        {
          index: 1,
          uuid: "AMD-card2",
          name: "AMD GPU (card2)",
          totalMib: 16384,
          usedMib: 0,
          freeMib: 16384,
        },
      ],
    });
  });

  test("no card with VRAM: null (not an AMD box); unreadable figures: a reason", async () => {
    expect(await readAmdCards(await sysfs({ 0: null }))).toBeNull();
    expect(await readAmdCards(join(root, "no-sys"))).toBeNull();
    const bad = await sysfs({ 0: [GIB, 2 * GIB] });
    expect(await readAmdCards(bad)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("card0: unreadable VRAM figures"),
    });
  });

  test("unique_id and product_name name the card when present", async () => {
    const sys = await sysfs({ 0: [GIB, 0] });
    await writeFile(join(sys, "class/drm/card0/device/unique_id"), "6e8d2a1f\n");
    await writeFile(join(sys, "class/drm/card0/device/product_name"), "AMD Radeon RX 7900 XTX\n");
    expect(await readAmdCards(sys)).toMatchObject({
      ok: true,
      value: [{ uuid: "AMD-6e8d2a1f", name: "AMD Radeon RX 7900 XTX" }],
    });
  });
});

const two: GpuInfo[] = [
  { index: 0, uuid: "AMD-card0", name: "a", totalMib: 24576, usedMib: 11000, freeMib: 13576 },
  { index: 1, uuid: "AMD-card1", name: "b", totalMib: 24576, usedMib: 0, freeMib: 24576 },
];

describe("AMD: per-process tools", () => {
  test("amd-smi process --json: vram_mem in any unit, idle cards as the string they print", async () => {
    const text = await readFile(join(AMD, "amd-smi-process.json"), "utf8");
    expect(parseAmdSmiProcesses(text, two)).toEqual({
      ok: true,
      value: [
        { pid: 41200, gpuUuid: "AMD-card0", usedMib: 8192 },
        { pid: 5120, gpuUuid: "AMD-card0", usedMib: 2048 },
      ],
    });
    const idle = await readFile(join(AMD, "amd-smi-idle.json"), "utf8");
    expect(parseAmdSmiProcesses(idle, two)).toEqual({ ok: true, value: [] });
  });

  test("rocm-smi --showpids: bytes, one card only (it does not say which card)", async () => {
    const text = await readFile(join(AMD, "rocm-smi-showpids.txt"), "utf8");
    expect(parseRocmSmiPids(text, two.slice(0, 1))).toEqual({
      ok: true,
      value: [
        { pid: 41200, gpuUuid: "AMD-card0", usedMib: 8192 },
        { pid: 5120, gpuUuid: "AMD-card0", usedMib: 2048 },
      ],
    });
    expect(parseRocmSmiPids(text, two)).toMatchObject({ ok: false });
    const none = await readFile(join(AMD, "rocm-smi-none.txt"), "utf8");
    expect(parseRocmSmiPids(none, two)).toEqual({ ok: true, value: [] });
  });

  test("garbage never throws", () => {
    for (const text of [
      "",
      "not json",
      "{}",
      '[{"gpu":"x"}]',
      '[{"gpu":0,"process_list":[{"process_info":{"pid":"x"}}]}]',
    ]) {
      expect(parseAmdSmiProcesses(text, two).ok).toBe(false);
    }
    expect(parseRocmSmiPids("Segmentation fault", two).ok).toBe(false);
  });
});

describe("AMD: the probe", () => {
  test("qm's model found by amd-smi: ours per card and per root, foreign the rest", async () => {
    const sys = await sysfs({ 0: [24 * GIB, 11000 * 1024 ** 2], 1: [24 * GIB, 0] });
    const amdSmi = await tool("amd-smi", join(AMD, "amd-smi-process.json"));
    const tree = treeFromChildren((pid) => (pid === 41000 ? [41200] : []));
    const r = await probeGpu({
      command: "amd",
      sysfsRoot: sys,
      amdSmi,
      ourPids: [41000],
      processTree: tree,
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.reading).toMatchObject({
      kind: "amd",
      oursGb: 8,
      foreignGb: (11000 - 8192) / 1024,
      ourPidsOnGpu: [41200],
    });
    expect(r.reading.byRoot).toEqual(new Map([[41000, 8]]));
    expect(await readFile(`${amdSmi}.args`, "utf8")).toBe("process --json\n");
  });

  test("no amd-smi: rocm-smi on a one-card box", async () => {
    const sys = await sysfs({ 0: [24 * GIB, 11000 * 1024 ** 2] });
    const rocmSmi = await tool("rocm-smi", join(AMD, "rocm-smi-showpids.txt"));
    const r = await probeGpu({
      command: "amd",
      sysfsRoot: sys,
      amdSmi: missing(),
      rocmSmi,
      ourPids: [41200],
      processTree: treeFromChildren(() => []),
    });
    expect(r).toMatchObject({ ok: true, reading: { kind: "amd", oursGb: 8 } });
  });

  test("neither tool: fine while idle (the tools are not even run); unattributed once a model runs", async () => {
    const sys = await sysfs({ 0: [24 * GIB, 2 * GIB] });
    const amdSmi = await tool("amd-smi", join(AMD, "amd-smi-idle.json"));
    const idle = await probeGpu({ command: "amd", sysfsRoot: sys, amdSmi });
    expect(idle).toMatchObject({ ok: true, reading: { kind: "amd", foreignGb: 2, oursGb: 0 } });
    expect(await readFile(`${amdSmi}.args`, "utf8").catch(() => "")).toBe("");
    const busy = await probeGpu({
      command: "amd",
      sysfsRoot: sys,
      amdSmi: missing(),
      rocmSmi: missing(),
      ourPids: [7],
      processTree: treeFromChildren(() => []),
    });
    expect(busy).toMatchObject({
      ok: false,
      kind: "amd",
      reason: expect.stringContaining(
        "no per-process GPU memory on this AMD box (tool not installed; tool not installed)",
      ),
      unattributed: { kind: "amd", usedGb: 2, foreignGb: 2, oursGb: 0 },
    });
  });

  test("no AMD card: kind none, so auto can say no GPU was found", async () => {
    const r = await probeGpu({ command: "amd", sysfsRoot: await sysfs({}) });
    expect(r).toMatchObject({ ok: false, kind: "none" });
  });
});

const MEMINFO = `MemTotal:       127535624 kB
MemFree:        98273252 kB
MemAvailable:   115343360 kB
Buffers:          120004 kB
Cached:         17420120 kB
`;

describe("unified memory", () => {
  test("the platform's meminfo as total and available; junk is null", async () => {
    const proc = await dir();
    await writeFile(join(proc, "meminfo"), MEMINFO);
    expect(unifiedMemory(linuxPlatform({ root: proc }).memory())).toEqual({
      totalBytes: 127535624 * 1024,
      availableBytes: 115343360 * 1024,
    });
    const junk = async (text: string) => {
      const other = await dir();
      await writeFile(join(other, "meminfo"), text);
      return unifiedMemory(linuxPlatform({ root: other }).memory());
    };
    expect(await junk("MemTotal: 10 kB\n")).toBeNull();
    expect(await junk("MemTotal: 10 kB\nMemAvailable: 20 kB\n")).toBeNull();
    expect(unifiedMemory(null)).toBeNull();
  });

  test("GB10 ([N/A] memory): total and free from meminfo, ours the RSS of qm's trees", async () => {
    const proc = await dir();
    await writeFile(join(proc, "meminfo"), MEMINFO);
    const smi = await tool(
      "nvidia-smi",
      "", // replaced below: the two queries answer differently
    );
    await writeFile(
      smi,
      `#!/bin/sh\ncase "$*" in *--query-gpu*) cat "${join(SMI_FIXTURES, "gpu-gb10-unified.txt")}";; *) echo "9000, GPU-a4f1e3c2-1d0b-4e9a-8f7c-6b5a4d3c2e1f, [N/A]";; esac\n`,
    );
    const tree = treeFromChildren((pid) => (pid === 9000 ? [9001] : []));
    const rss = async (pids: readonly number[]) =>
      new Map(pids.map((p) => [p, p === 9000 ? 1 * GIB : 7 * GIB] as const));
    const r = await probeGpu({
      command: smi,
      memory: () => linuxPlatform({ root: proc }).memory(),
      ourPids: [9000],
      processTree: tree,
      rss,
    });
    if (!r.ok) throw new Error(r.reason);
    const total = (127535624 * 1024) / GIB;
    const free = (115343360 * 1024) / GIB;
    expect(r.reading).toMatchObject({
      kind: "nvidia-unified",
      totalGb: total,
      freeGb: free,
      usedGb: total - free,
      oursGb: 8,
      foreignGb: total - free - 8,
    });
    expect(r.reading.gpus[0]?.name).toBe("NVIDIA GB10");
    expect(r.reading.byRoot).toEqual(new Map([[9000, 8]]));
  });

  test('"unified" without nvidia-smi (a Jetson without it); no meminfo: a reason', async () => {
    const proc = await dir();
    await writeFile(join(proc, "meminfo"), MEMINFO);
    const r = await probeGpu({
      command: "unified",
      memory: () => linuxPlatform({ root: proc }).memory(),
      processTree: treeFromChildren(() => []),
    });
    expect(r).toMatchObject({ ok: true, reading: { kind: "nvidia-unified", oursGb: 0 } });
    const none = await probeGpu({
      command: "unified",
      memory: () => linuxPlatform({ root: join(root, "no-proc") }).memory(),
    });
    expect(none).toMatchObject({
      ok: false,
      kind: "nvidia-unified",
      reason: expect.stringContaining("meminfo cannot be read"),
    });
  });
});

describe("NVIDIA in a container (its own PID namespace)", () => {
  test("nvidia-smi lists only pids that are not qm's while a model runs: unattributed, not lost", async () => {
    const smi = await tool("nvidia-smi", "");
    await writeFile(
      smi,
      `#!/bin/sh\ncase "$*" in *--query-gpu*) cat "${join(SMI_FIXTURES, "gpu-rtx4090-r550.txt")}";; *) cat "${join(SMI_FIXTURES, "apps-rtx4090-r550.txt")}";; esac\n`,
    );
    const r = await probeGpu({
      command: smi,
      ourPids: [777],
      processTree: treeFromChildren(() => []),
    });
    expect(r).toMatchObject({
      ok: false,
      kind: "nvidia",
      reason: expect.stringContaining("lists none of qm's model processes"),
      unattributed: { kind: "nvidia", usedGb: 18234 / 1024, foreignGb: 18234 / 1024, oursGb: 0 },
    });
  });
});

describe("auto", () => {
  const noTree = treeFromChildren(() => []);

  test("no nvidia-smi, an AMD card: amd; neither: none, named; macOS: apple", async () => {
    const nvidiaSmi = missing();
    const sys = await sysfs({ 0: [24 * GIB, GIB] });
    expect(
      await probeGpu({ command: "auto", nvidiaSmi, sysfsRoot: sys, processTree: noTree }),
    ).toMatchObject({ ok: true, reading: { kind: "amd", foreignGb: 1 } });
    const empty = await sysfs({});
    expect(
      await probeGpu({ command: "auto", nvidiaSmi, sysfsRoot: empty, platform: "linux" }),
    ).toEqual({
      ok: false,
      kind: "none",
      reason: "no GPU found (tool not found, no AMD card in /sys/class/drm): static budget applies",
    });
    expect(
      await probeGpu({ command: "auto", nvidiaSmi, sysfsRoot: empty, platform: "darwin" }),
    ).toMatchObject({ ok: false, kind: "apple" });
  });

  test("nvidia-smi that finds a GPU wins; one that finds none lets AMD be looked for", async () => {
    const nvidiaSmi = await tool("nvidia-smi", "");
    await writeFile(
      nvidiaSmi,
      `#!/bin/sh\ncase "$*" in *--query-gpu*) cat "${join(SMI_FIXTURES, "gpu-rtx4090-r550.txt")}";; *) cat "${join(SMI_FIXTURES, "apps-none.txt")}";; esac\n`,
    );
    const sys = await sysfs({ 0: [24 * GIB, GIB] });
    expect(
      await probeGpu({ command: "auto", nvidiaSmi, sysfsRoot: sys, processTree: noTree }),
    ).toMatchObject({ ok: true, reading: { kind: "nvidia", foreignGb: 18234 / 1024 } });
    const noDevices = await tool("nvidia-smi", join(SMI_FIXTURES, "no-devices.txt"), 6);
    expect(
      await probeGpu({
        command: "auto",
        nvidiaSmi: noDevices,
        sysfsRoot: sys,
        processTree: noTree,
      }),
    ).toMatchObject({ ok: true, reading: { kind: "amd" } });
  });
});

describe("process trees know their roots", () => {
  test("each descendant is its root's; a pid reached twice keeps its first root", async () => {
    const kids: Record<number, number[]> = { 1: [2, 3], 3: [4], 10: [11, 4] };
    const tree = await treeFromChildren((pid) => kids[pid] ?? [])([1, 10]);
    expect(tree).toBeInstanceOf(PidTree);
    const roots = [1, 2, 3, 4, 10, 11].map((p) => (tree as PidTree).rootOf(p));
    expect(roots).toEqual([1, 1, 1, 1, 10, 10]);
    expect((tree as PidTree).rootOf(99)).toBeUndefined();
  });
});
