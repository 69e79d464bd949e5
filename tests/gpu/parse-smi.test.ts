import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { parseComputeApps } from "../../src/gpu/parse-compute-apps.ts";
import { parseGpuQuery } from "../../src/gpu/parse-gpu-query.ts";
import { SMI_FIXTURES, smi } from "./fixtures.ts";

describe("parseGpuQuery", () => {
  test("one card (R550): used + free need not add up to total", () => {
    expect(parseGpuQuery(smi("gpu-rtx4090-r550.txt"))).toEqual({
      ok: true,
      value: [
        {
          index: 0,
          uuid: "GPU-5f1c8a2e-93d4-4b7e-a0c6-2e8f1d3b9a47",
          name: "NVIDIA GeForce RTX 4090",
          totalMib: 24564,
          usedMib: 18234,
          freeMib: 5933,
        },
      ],
    });
  });

  test("four cards", () => {
    const r = parseGpuQuery(smi("gpu-4xa100-r535.txt"));
    if (!r.ok) throw new Error(r.reason);
    expect(r.value.map((g) => [g.index, g.name, g.totalMib, g.usedMib])).toEqual([
      [0, "NVIDIA A100-SXM4-80GB", 81920, 4],
      [1, "NVIDIA A100-SXM4-80GB", 81920, 40961],
      [2, "NVIDIA A100-SXM4-80GB", 81920, 0],
      [3, "NVIDIA A100-SXM4-80GB", 81920, 12288],
    ]);
  });

  test("old naming (R418) and CRLF (WSL)", () => {
    expect(parseGpuQuery(smi("gpu-gtx1080ti-r418.txt"))).toMatchObject({
      ok: true,
      value: [{ name: "GeForce GTX 1080 Ti", totalMib: 11178, freeMib: 10655 }],
    });
    expect(parseGpuQuery(smi("gpu-rtx3080-wsl.txt"))).toMatchObject({
      ok: true,
      value: [{ name: "NVIDIA GeForce RTX 3080", totalMib: 10240, usedMib: 2113 }],
    });
  });

  test("a name holding a comma keeps the other columns in place", () => {
    const r = parseGpuQuery("0, GPU-abc, Odd, Name, 100, 10, 90\n");
    expect(r).toMatchObject({
      ok: true,
      value: [{ name: "Odd, Name", totalMib: 100, freeMib: 90 }],
    });
  });

  test.each([
    ["gpu-gb10-unified.txt", "GPU 0 (NVIDIA GB10) does not report its memory (nvidia-smi: [N/A])"],
    [
      "gpu-unknown-error.txt",
      "GPU 0 (NVIDIA GeForce RTX 4090) does not report its memory (nvidia-smi: [Unknown Error])",
    ],
    ["no-devices.txt", "nvidia-smi found no GPU"],
    [
      "driver-failed.txt",
      "nvidia-smi cannot talk to the NVIDIA driver (not loaded, or not installed)",
    ],
    [
      "nvml-mismatch.txt",
      "NVIDIA driver and library versions differ (driver updated without a reboot?)",
    ],
    ["nvml-unknown.txt", "nvidia-smi cannot initialise NVML: Unknown Error"],
    ["invalid-field.txt", 'this nvidia-smi is too old to report "gpu_uuid"'],
    [
      "garbage.txt",
      'nvidia-smi output not understood: "<html><body>502 Bad Gateway</body></html>"',
    ],
    ["gpu-short-row.txt", expect.stringMatching(/^nvidia-smi output not understood: "0, GPU-5f1c/)],
    ["apps-none.txt", "nvidia-smi listed no GPU"],
  ])("%s cannot be trusted", (file, reason) => {
    expect(parseGpuQuery(smi(file))).toEqual({ ok: false, reason });
  });

  test("impossible figures and long garbage are refused, quoted briefly", () => {
    expect(parseGpuQuery("0, GPU-x, Card, 100, 200, 0")).toEqual({
      ok: false,
      reason: 'GPU 0 reports impossible memory figures: "0, GPU-x, Card, 100, 200, 0"',
    });
    const r = parseGpuQuery("x".repeat(500));
    expect(r.ok ? "" : r.reason.length).toBeLessThan(100);
  });
});

describe("parseComputeApps", () => {
  test("processes with their memory; one process on two cards appears twice", () => {
    expect(parseComputeApps(smi("apps-rtx4090-r550.txt"))).toEqual({
      ok: true,
      value: [
        { pid: 48213, gpuUuid: "GPU-5f1c8a2e-93d4-4b7e-a0c6-2e8f1d3b9a47", usedMib: 12838 },
        { pid: 51877, gpuUuid: "GPU-5f1c8a2e-93d4-4b7e-a0c6-2e8f1d3b9a47", usedMib: 4730 },
      ],
    });
    const multi = parseComputeApps(smi("apps-4xa100-r535.txt"));
    expect(multi.ok && multi.value.filter((a) => a.pid === 9305).length).toBe(2);
  });

  test("no processes: empty output, or the older wording", () => {
    expect(parseComputeApps(smi("apps-none.txt"))).toEqual({ ok: true, value: [] });
    expect(parseComputeApps(smi("apps-none-old.txt"))).toEqual({ ok: true, value: [] });
  });

  test("[N/A] and [Not Supported] memory become null", () => {
    const na = parseComputeApps(smi("apps-wddm-na.txt"));
    expect(na.ok && na.value.map((a) => a.usedMib)).toEqual([null, null]);
    const ns = parseComputeApps(smi("apps-not-supported.txt"));
    expect(ns).toEqual({
      ok: true,
      value: [{ pid: 1377, gpuUuid: "GPU-7e2d5c1a-88b3-2f40-6c1e-9d0a4b7f3e21", usedMib: null }],
    });
  });

  test("failures and garbage", () => {
    expect(parseComputeApps(smi("driver-failed.txt"))).toMatchObject({ ok: false });
    expect(parseComputeApps(smi("apps-garbage.txt"))).toEqual({
      ok: false,
      reason: 'nvidia-smi output not understood: "Segmentation fault (core dumped)"',
    });
    expect(parseComputeApps("12, GPU-a, lots")).toMatchObject({ ok: false });
    expect(parseComputeApps("-3, GPU-a, 5")).toMatchObject({ ok: false });
  });
});

test("no recorded output makes either parser throw", () => {
  for (const file of readdirSync(SMI_FIXTURES).filter((f) => f.endsWith(".txt"))) {
    expect(typeof parseGpuQuery(smi(file)).ok).toBe("boolean");
    expect(typeof parseComputeApps(smi(file)).ok).toBe("boolean");
  }
});
