import { describe, expect, test } from "bun:test";
import { attribute } from "../../src/gpu/attribute.ts";
import { parseComputeApps } from "../../src/gpu/parse-compute-apps.ts";
import { parseGpuQuery } from "../../src/gpu/parse-gpu-query.ts";
import { smi } from "./fixtures.ts";

function parsed<T>(r: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const rtx = () => parsed(parseGpuQuery(smi("gpu-rtx4090-r550.txt")));
const rtxApps = () => parsed(parseComputeApps(smi("apps-rtx4090-r550.txt")));

describe("attribute", () => {
  test("ours = our trees' per-process memory; foreign = used − ours (GB = 1024 MiB)", () => {
    const r = attribute({
      gpus: rtx(),
      apps: rtxApps(),
      ours: new Set([48213, 48200]),
      expectOurs: true,
    });
    expect(r).toMatchObject({
      ok: true,
      value: {
        totalGb: 24564 / 1024,
        usedGb: 18234 / 1024,
        freeGb: 5933 / 1024,
        oursGb: 12838 / 1024,
        foreignGb: (18234 - 12838) / 1024,
        ourPidsOnGpu: [48213],
      },
    });
  });

  test("multi-GPU: a process on two cards is counted on each; foreign summed per card", () => {
    const gpus = parsed(parseGpuQuery(smi("gpu-4xa100-r535.txt")));
    const apps = parsed(parseComputeApps(smi("apps-4xa100-r535.txt")));
    const r = attribute({ gpus, apps, ours: new Set([9305, 11873]), expectOurs: true });
    if (!r.ok) throw new Error(r.reason);
    expect(r.value.oursGb).toBe((6142 + 0 + 6140) / 1024);
    // card 1: 40961 used, none ours; card 3: 12288 − 12282 = 6; cards 0 and 2: 4 and 0.
    expect(r.value.foreignGb).toBe((4 + 40961 + 0 + 6) / 1024);
    expect(r.value.ourPidsOnGpu).toEqual([9305, 11873]);
  });

  test("idle qm: everything used is foreign, even where per-process memory is [N/A]", () => {
    const gpus = parsed(parseGpuQuery(smi("gpu-rtx3080-wsl.txt")));
    const apps = parsed(parseComputeApps(smi("apps-wddm-na.txt")));
    const r = attribute({ gpus, apps, ours: new Set(), expectOurs: false });
    expect(r).toMatchObject({ ok: true, value: { oursGb: 0, foreignGb: 2113 / 1024 } });
  });

  test("our process with [N/A] memory: cannot be trusted", () => {
    const gpus = parsed(parseGpuQuery(smi("gpu-rtx3080-wsl.txt")));
    const apps = parsed(parseComputeApps(smi("apps-wddm-na.txt")));
    expect(attribute({ gpus, apps, ours: new Set([2936]), expectOurs: true })).toEqual({
      ok: false,
      reason: "per-process memory not reported by this driver (WDDM/WSL?)",
    });
  });

  test("a starting model (no ready one): its memory is ours once listed, and need not be yet", () => {
    const listed = attribute({
      gpus: rtx(),
      apps: rtxApps(),
      ours: new Set([48213]),
      expectOurs: false,
    });
    expect(listed).toMatchObject({
      ok: true,
      value: { oursGb: 12838 / 1024, foreignGb: (18234 - 12838) / 1024 },
    });
    const unlisted = attribute({
      gpus: rtx(),
      apps: [],
      ours: new Set([48213]),
      expectOurs: false,
    });
    expect(unlisted).toMatchObject({ ok: true, value: { oursGb: 0, foreignGb: 18234 / 1024 } });
  });

  test("a starting model listed with [N/A] memory: cannot be trusted (it would pass for foreign)", () => {
    const gpus = parsed(parseGpuQuery(smi("gpu-rtx3080-wsl.txt")));
    const apps = parsed(parseComputeApps(smi("apps-wddm-na.txt")));
    expect(attribute({ gpus, apps, ours: new Set([2936]), expectOurs: false })).toEqual({
      ok: false,
      reason: "per-process memory not reported by this driver (WDDM/WSL?)",
    });
  });

  test("models of ours that nvidia-smi does not list (WSL, containers): cannot be trusted", () => {
    for (const apps of [[], rtxApps()]) {
      const r = attribute({ gpus: rtx(), apps, ours: new Set([777]), expectOurs: true });
      expect(r).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/lists none of qm's model processes/),
      });
    }
  });

  test("a process that freed memory between the two queries never makes foreign negative", () => {
    const gpus = [
      { index: 0, uuid: "GPU-a", name: "x", totalMib: 1000, usedMib: 100, freeMib: 900 },
    ];
    const apps = [{ pid: 1, gpuUuid: "GPU-a", usedMib: 300 }];
    const r = attribute({ gpus, apps, ours: new Set([1]), expectOurs: true });
    expect(r).toMatchObject({ ok: true, value: { foreignGb: 0, oursGb: 300 / 1024 } });
  });
});

describe("attribution per card", () => {
  test("each card has its own used, free, ours and foreign, and the pids of qm's listed on it", () => {
    const gpus = [
      { index: 0, uuid: "GPU-a", name: "x", totalMib: 24576, usedMib: 10240, freeMib: 14336 },
      { index: 1, uuid: "GPU-b", name: "x", totalMib: 24576, usedMib: 3072, freeMib: 21504 },
    ];
    const apps = [
      { pid: 10, gpuUuid: "GPU-a", usedMib: 8192 },
      { pid: 11, gpuUuid: "GPU-b", usedMib: 2048 },
      { pid: 10, gpuUuid: "GPU-b", usedMib: 512 },
      { pid: 99, gpuUuid: "GPU-a", usedMib: 2048 },
    ];
    const r = attribute({ gpus, apps, ours: new Set([10, 11]), expectOurs: true });
    expect(r.ok && r.value.cards).toEqual([
      {
        index: 0,
        totalGb: 24,
        usedGb: 10,
        freeGb: 14,
        oursGb: 8,
        foreignGb: 2,
        ourPids: [10],
        byRoot: new Map([[10, 8]]),
      },
      {
        index: 1,
        totalGb: 24,
        usedGb: 3,
        freeGb: 21,
        oursGb: 2.5,
        foreignGb: 0.5,
        ourPids: [10, 11],
        byRoot: new Map([
          [11, 2],
          [10, 0.5],
        ]),
      },
    ]);
    // The box's figures are the cards' sums.
    expect(r).toMatchObject({ ok: true, value: { oursGb: 10.5, foreignGb: 2.5 } });
  });
});
