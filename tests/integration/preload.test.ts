import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// dist/qm with the demo upstream: preloads load once the listener is up, in order, within the
// budget; one that does not fit is skipped and evicts nothing.
setDefaultTimeout(30_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[server]
preload = ["slow", "big"]

[resources]
vram_budget_gb = 10
gpu_probe = "off"

[models.slow]
cmd = "\${demo} --load-delay-ms 1500"
est_vram_gb = 4
[models.big]
cmd = "\${demo}"
est_vram_gb = 8
[models.small]
cmd = "\${demo}"
est_vram_gb = 2
preload = true
[models.other]
cmd = "\${demo}"
est_vram_gb = 2
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

describe("preload from dist/qm", () => {
  test("the listener answers while the first preload is still loading", async () => {
    const s = await status(qm.url);
    expect(s.preload).toBeDefined();
    expect(s.preload!.done).toEqual([]);
    expect(s.models.find((m) => m.id === "slow")!.state).toBe("starting");
  });

  test("a request meanwhile is served by the normal decision tree", async () => {
    const res = await chat(qm.url, "other");
    expect(res.status).toBe(200);
    await res.json();
  });

  test("in order, within the budget: big is skipped, small loads, nothing evicted", async () => {
    const s = await until(
      () => status(qm.url),
      (v) => v.preload!.pending.length === 0 && v.preload!.loading === null,
      15_000,
    );
    expect(s.preload!.done).toEqual(["slow", "small"]);
    expect(s.preload!.skipped.map((x) => x.model)).toEqual(["big"]);
    const ready = s.models.filter((m) => m.state === "ready").map((m) => m.id);
    expect(ready.sort()).toEqual(["other", "slow", "small"]);
    await qm.waitLog("preload: skipped big");
  });
});
