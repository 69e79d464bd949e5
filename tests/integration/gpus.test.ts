import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import { fakeSmiCards } from "../support/fake-smi.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// dist/qm, the demo upstream and a fake nvidia-smi with 2 and then 4 cards: models land on
// different cards, each process sees its cards in CUDA_VISIBLE_DEVICES and ${GPU_IDS}.
setDefaultTimeout(40_000);

const running: QmServer[] = [];
afterAll(async () => {
  for (const qm of running) expect(await qm.stop()).toBe(0);
});

async function logs(qm: QmServer, id: string): Promise<string> {
  return (await fetch(`${qm.url}/api/models/${id}/logs`)).text();
}

/** Chats with `id` and returns the answer's text. */
async function ask(qm: QmServer, id: string): Promise<string> {
  const res = await chat(qm.url, id);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

describe("two cards detected by nvidia-smi", () => {
  const { smi, place } = fakeSmiCards(2);
  const onCards: Record<number, [number, number]> = {};
  let qm: QmServer;

  test("both cards show in status, each with its memory as its budget", async () => {
    qm = await serve(`
[resources]
gpu_probe = "${smi}"
gpu_probe_interval_ms = 100
oom_guard_reserve_gb = 1

[models.a]
cmd = "\${demo}"
est_vram_gb = 16
[models.b]
cmd = "\${demo}"
est_vram_gb = 16
[models.both]
cmd = "\${demo}-\${GPU_IDS}"
est_vram_gb = 16
gpus = 2
`);
    running.push(qm);
    const s = await until(
      () => status(qm.url),
      (v) => (v.resources.gpus?.length ?? 0) === 2,
    );
    expect(s.resources.gpus!.map((c) => [c.index, c.budget_gb, c.ceiling_gb])).toEqual([
      [0, 24, 23],
      [1, 24, 23],
    ]);
  });

  test("two models of one swap group land on different cards; neither evicts the other", async () => {
    await ask(qm, "a");
    let s = await status(qm.url);
    const a = s.models.find((m) => m.id === "a")!;
    expect(a.gpus).toEqual([0]);
    onCards[a.pid!] = [16384, 0];
    place(onCards);
    await ask(qm, "b");
    s = await status(qm.url);
    const b = s.models.find((m) => m.id === "b")!;
    expect(b.gpus).toEqual([1]);
    onCards[b.pid!] = [16384, 1];
    place(onCards);
    expect(s.models.filter((m) => m.state === "ready").map((m) => m.id)).toEqual(["a", "b"]);
    expect(await logs(qm, "a")).toContain("CUDA_VISIBLE_DEVICES=0");
    expect(await logs(qm, "b")).toContain("CUDA_VISIBLE_DEVICES=1");
    s = await until(
      () => status(qm.url),
      (v) => v.resources.gpus!.every((c) => c.reading?.ours_gb === 16),
    );
    expect(s.resources.gpus!.map((c) => c.models)).toEqual([["a"], ["b"]]);
  });

  test("a model on both cards evicts on them (LRU), and reads its cards in GPU_IDS", async () => {
    const text = await ask(qm, "both");
    expect(text).toContain("both-0,1");
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "both")!.gpus).toEqual([0, 1]);
    // 8 GB on each card: a (LRU, card 0) and b (card 1) each leave 7 GB of 23; both go.
    expect(s.models.filter((m) => m.state === "ready").map((m) => m.id)).toEqual(["both"]);
    expect(await logs(qm, "both")).toContain("CUDA_VISIBLE_DEVICES=0,1");
  });
});

describe("four cards from resources.gpus", () => {
  const { smi } = fakeSmiCards(4);
  let qm: QmServer;

  test("four models land on four cards, each told its own card", async () => {
    qm = await serve(`
[resources]
gpu_probe = "${smi}"
gpu_probe_interval_ms = 100
gpus = [
  {index = 0, vram_budget_gb = 20},
  {index = 1, vram_budget_gb = 20},
  {index = 2, vram_budget_gb = 20},
  {index = 3, vram_budget_gb = 20},
]

[models.m0]
cmd = "\${demo}"
est_vram_gb = 12
[models.m1]
cmd = "\${demo}"
est_vram_gb = 12
[models.m2]
cmd = "\${demo}"
est_vram_gb = 12
[models.m3]
cmd = "\${demo}"
est_vram_gb = 12
[models.fixed]
cmd = "\${demo}"
est_vram_gb = 4
gpus = [2]
`);
    running.push(qm);
    for (const id of ["m0", "m1", "m2", "m3"]) await ask(qm, id);
    const s = await status(qm.url);
    const placed = Object.fromEntries(s.models.map((m) => [m.id, m.gpus]));
    expect([placed.m0, placed.m1, placed.m2, placed.m3]).toEqual([[0], [1], [2], [3]]);
    for (const [i, id] of ["m0", "m1", "m2", "m3"].entries()) {
      expect(await logs(qm, id)).toContain(`CUDA_VISIBLE_DEVICES=${i}`);
    }
    expect(s.resources.gpus!.map((c) => c.used_gb)).toEqual([12, 12, 12, 12]);
  });

  test("a fixed card fits beside what runs there; nothing else moves", async () => {
    await ask(qm, "fixed");
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "fixed")!.gpus).toEqual([2]);
    expect(s.models.filter((m) => m.state === "ready")).toHaveLength(5);
    expect(await logs(qm, "fixed")).toContain("CUDA_VISIBLE_DEVICES=2");
  });
});
