import { expect, test } from "bun:test";
import { spawnGuard } from "../../src/gpu/spawn-guard.ts";
import type { GpuInfo, GpuReading } from "../../src/gpu/types.ts";

const gpu = (index: number, freeMib: number, totalMib = 24576): GpuInfo => ({
  index,
  uuid: `GPU-${index}`,
  name: "card",
  totalMib,
  usedMib: totalMib - freeMib,
  freeMib,
});
const reading = (...gpus: GpuInfo[]) => ({ gpus }) as GpuReading;

test("fits when free ≥ estimate + reserve", () => {
  const r = reading(gpu(0, 7 * 1024));
  expect(spawnGuard(r, { model: "qwen-7b", estimateGb: 6, reserveGb: 1 })).toEqual({ ok: true });
});

test("refuses with a message naming the model and the numbers", () => {
  const r = reading(gpu(0, 4.3 * 1024));
  expect(spawnGuard(r, { model: "qwen-7b", estimateGb: 6.2, reserveGb: 1 })).toEqual({
    ok: false,
    message:
      "cannot start qwen-7b now: it needs 6.2 GB (est_vram_gb) + 1.0 GB reserve (oom_guard_reserve_gb), " +
      "but nvidia-smi reports 4.3 GB free of 24.0 GB on GPU 0",
  });
});

test("several cards: free memory is summed (llama.cpp splits across them), or chosen ones", () => {
  const r = reading(gpu(0, 4096), gpu(1, 4096));
  expect(spawnGuard(r, { model: "m", estimateGb: 7, reserveGb: 1 })).toEqual({ ok: true });
  const one = spawnGuard(r, { model: "m", estimateGb: 7, reserveGb: 1, gpuIndexes: [1] });
  expect(one).toMatchObject({
    ok: false,
    message: expect.stringMatching(/4\.0 GB free of 24\.0 GB on GPU 1$/),
  });
  const both = spawnGuard(r, { model: "m", estimateGb: 9, reserveGb: 0 });
  expect(both).toMatchObject({
    ok: false,
    message: expect.stringMatching(/8\.0 GB free of 48\.0 GB on GPUs 0,1$/),
  });
  expect(spawnGuard(r, { model: "m", estimateGb: 1, reserveGb: 0, gpuIndexes: [5] })).toMatchObject(
    { ok: false },
  );
});

test("an unknown estimate (0) is not judged here", () => {
  expect(spawnGuard(reading(gpu(0, 0)), { model: "m", estimateGb: 0, reserveGb: 1 })).toEqual({
    ok: true,
  });
});
