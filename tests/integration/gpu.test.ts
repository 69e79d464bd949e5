import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import { fakeSmi } from "../support/fake-smi.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes, a fake nvidia-smi (../support/fake-smi.ts) and a real probe loop (every
// 100 ms here).
setDefaultTimeout(30_000);

const { smi, card } = fakeSmi();

let qm: QmServer;

beforeAll(async () => {
  card({}, 0);
  qm = await serve(`
[resources]
vram_budget_gb = 24
oom_guard_reserve_gb = 1
gpu_probe = "${smi}"
gpu_probe_interval_ms = 100

[groups.gpu]
members = ["a", "b", "c"]

[models.a]
cmd = "\${demo}"
est_vram_gb = 8
[models.b]
cmd = "\${demo}"
est_vram_gb = 8
[models.c]
cmd = "\${demo}"
est_vram_gb = 8
[models.huge]
cmd = "\${demo}"
est_vram_gb = 30
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const onCard: Record<number, number> = {};
/** Puts a loaded model's process on the fake card with `mib` of memory. */
async function track(id: string, mib = 8192): Promise<void> {
  const pid = (await status(qm.url)).models.find((m) => m.id === id)!.pid!;
  onCard[pid] = mib;
}

describe("live VRAM ceiling from nvidia-smi", () => {
  test("an idle card: baseline learned, ceiling = budget − reserve, status says so", async () => {
    const s = await until(
      () => status(qm.url),
      (v) => v.resources.probe.startsWith("live:"),
    );
    expect(s.resources.vram_ceiling_gb).toBe(23);
    expect([s.resources.gpu_kind, s.resources.attribution]).toEqual(["nvidia", "pids"]);
    expect(s.models.find((m) => m.id === "a")?.est_vram_gb).toBe(8);
  });

  test("two models fit beside each other under the budget", async () => {
    await (await chat(qm.url, "a")).json();
    await track("a");
    card(onCard, 0);
    await (await chat(qm.url, "b")).json();
    await track("b");
    card(onCard, 0);
    const s = await status(qm.url);
    expect(s.models.filter((m) => m.state === "ready").map((m) => m.id)).toEqual(["a", "b"]);
    expect(s.resources.vram_used_gb).toBe(16);
  });

  test("another program takes 8 GB: the ceiling tightens and the idle LRU model is shed", async () => {
    card(onCard, 8192);
    const s = await until(
      () => status(qm.url),
      (v) => v.models.find((m) => m.id === "a")?.state === "stopped",
    );
    expect(s.resources.vram_ceiling_gb).toBe(15);
    expect(s.resources.gpu?.foreign_gb).toBe(8);
    expect(s.models.find((m) => m.id === "b")?.state).toBe("ready");
    await qm.waitLog("GPU memory pressure");
  });

  test("admission uses the tightened ceiling: loading c evicts b instead of overcommitting", async () => {
    const res = await chat(qm.url, "c");
    expect(res.status).toBe(200);
    await res.json();
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "b")?.state).toBe("stopped");
    expect(s.models.find((m) => m.id === "c")?.state).toBe("ready");
  });

  test("a model that cannot fit even alone gets 503 naming the numbers", async () => {
    const res = await chat(qm.url, "huge");
    expect(res.status).toBe(503);
    const err = ((await res.json()) as { error: { message: string; code: string } }).error;
    expect(err.code).toBe("cannot_fit");
    expect(err.message).toContain("30 GB");
  });
});

describe("spawn guard", () => {
  test("refuses a load the card cannot hold, remembers it until memory changes, then loads", async () => {
    // Without a budget admission is static, so only the guard stands between a load and an OOM.
    const guard = fakeSmi();
    const other = await serve(`
[resources]
gpu_probe = "${guard.smi}"
gpu_probe_interval_ms = 100

[models.big]
cmd = "\${demo}"
est_vram_gb = 10
`);
    try {
      guard.card({}, 20_000); // a game holds 19.5 GB of 24
      const first = await chat(other.url, "big");
      expect(first.status).toBe(503);
      const msg = ((await first.json()) as { error: { message: string } }).error.message;
      expect(msg).toContain("nvidia-smi reports 4.5 GB free of 24.0 GB");
      const second = await chat(other.url, "big");
      expect(second.status).toBe(503);
      expect(((await second.json()) as { error: { message: string } }).error.message).toBe(msg);
      expect((await status(other.url)).models[0]?.pid).toBeNull(); // never spawned
      guard.card({}, 0); // the game quit
      await until(
        async () => (await chat(other.url, "big")).status,
        (code) => code === 200,
        5000,
      );
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });
});

describe("memory qm is still letting go of, or just taking", () => {
  test("the evicted model's memory shows up free late: the spawn guard waits for it, then loads", async () => {
    // A driver that reclaims an exited process's memory 1.5 s late: the guard's first reading
    // after the eviction still counts the evicted model's 10 GB as used.
    const lagging = fakeSmi(1500);
    lagging.card({}, 4096);
    const other = await serve(`
[resources]
vram_budget_gb = 16
oom_guard_reserve_gb = 1
gpu_probe = "${lagging.smi}"
gpu_probe_interval_ms = 100

[groups.gpu]
members = ["x", "y"]

[models.x]
cmd = "\${demo}"
est_vram_gb = 10
[models.y]
cmd = "\${demo}"
est_vram_gb = 10
`);
    try {
      // Baseline 4 GB learned: ceiling 16 − 1, so x and y (10 GB each) cannot both be resident.
      await until(
        () => status(other.url),
        (s) => s.resources.vram_ceiling_gb === 15,
      );
      await (await chat(other.url, "x")).json();
      const x = (await status(other.url)).models.find((m) => m.id === "x")!.pid!;
      lagging.card({ [x]: 10240 }, 4096);
      await until(
        () => status(other.url),
        (s) => s.resources.gpu?.free_gb === 10,
      );
      const res = await chat(other.url, "y");
      expect(res.status).toBe(200);
      await res.json();
      const s = await status(other.url);
      expect(s.models.map((m) => [m.id, m.state])).toEqual([
        ["x", "stopped"],
        ["y", "ready"],
      ]);
      await other.waitLog(/spawn guard: .*waited \d+ ms/);
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });

  test("a starting model's memory is qm's: not another program's, and no idle baseline", async () => {
    const gpu = fakeSmi();
    gpu.card({}, 2048);
    const other = await serve(`
[resources]
vram_budget_gb = 24
oom_guard_reserve_gb = 1
gpu_probe = "${gpu.smi}"
gpu_probe_interval_ms = 100

[groups.gpu]
members = ["slow"]

[models.slow]
cmd = "\${demo} --load-delay-ms 3000"
est_vram_gb = 10
`);
    try {
      await until(
        () => status(other.url),
        (s) => s.resources.gpu?.foreign_baseline_gb === 2,
      );
      const loading = chat(other.url, "slow");
      const starting = await until(
        () => status(other.url),
        (s) => s.models[0]?.state === "starting" && s.models[0].pid !== null,
      );
      gpu.card({ [starting.models[0]!.pid!]: 10015 }, 2048); // 9.78 GB, still loading
      const s = await until(
        () => status(other.url),
        (v) => (v.resources.gpu?.free_gb ?? 24) < 13,
      );
      expect(s.models[0]?.state).toBe("starting");
      expect(s.resources.gpu?.foreign_gb).toBe(2);
      expect(s.resources.gpu?.foreign_baseline_gb).toBe(2);
      expect(s.resources.vram_ceiling_gb).toBe(23);
      expect((await loading).status).toBe(200);
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });
});
