/**
 * `evict = "sleep"` end to end, from dist/qm with the demo upstream's `--sleep-mode`: an evicted
 * model sleeps in its own process, the next request wakes that same process, and a model that
 * fails to wake is restarted cold (a new process).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import { alive, QM, type QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads and wakes take real time.
setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[server]
metrics_on_api = true

[scheduler]
hold_ms = 0

[models.vllm]
cmd = "\${demo} --sleep-mode --wake-ms 50 --token-ms 0 --tokens 4"
evict = "sleep"

[models.broken]
cmd = "\${demo} --sleep-mode --fail-wake --token-ms 0 --tokens 4"
evict = "sleep"
sleep_level = 2

[models.other]
cmd = "\${demo} --token-ms 0 --tokens 4"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

async function model(id: string) {
  const s = await status(qm.url);
  return s.models.find((m) => m.id === id)!;
}

async function answered(id: string): Promise<void> {
  const res = await chat(qm.url, id);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  expect(body.choices[0]!.message.content.length).toBeGreaterThan(0);
}

describe("evict = sleep", () => {
  test("evicted, it sleeps in the same process; the next request wakes that process", async () => {
    await answered("vllm");
    const pid = (await model("vllm")).pid!;
    expect(pid).toBeGreaterThan(0);
    await answered("other"); // one group that swaps: vllm is evicted
    const asleep = await until(
      () => model("vllm"),
      (m) => m.state === "sleeping",
    );
    expect(asleep.pid).toBe(pid);
    expect(alive(pid)).toBe(true);
    // Sleeping holds no VRAM estimate; other is the only resident.
    expect((await status(qm.url)).models.find((m) => m.id === "other")?.state).toBe("ready");
    await answered("vllm");
    const woken = await model("vllm");
    expect(woken.state).toBe("ready");
    expect(woken.pid).toBe(pid);
    await qm.waitLog("model vllm: awake");
    // other (evict = "stop") was stopped for it, as before.
    expect((await model("other")).state).toBe("stopped");
  });

  test("a model that fails to wake is restarted cold: answered, by a new process", async () => {
    await answered("broken");
    const pid = (await model("broken")).pid!;
    await answered("other");
    await until(
      () => model("broken"),
      (m) => m.state === "sleeping" && m.pid === pid,
    );
    await answered("broken");
    const after = await model("broken");
    expect(after.state).toBe("ready");
    expect(after.pid).not.toBe(pid);
    expect(after.pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
    await qm.waitLog("restarting it cold");
  });

  test("metrics count the sleeps and the wakes, by how they went", async () => {
    const text = await (await fetch(`${qm.url}/metrics`)).text();
    // vllm slept for other, and again when broken came in; it woke once.
    expect(text).toMatch(/qm_sleeps_total\{model="vllm",result="ok"\} 2\n/);
    expect(text).toMatch(/qm_sleeps_total\{model="broken",result="ok"\} 1\n/);
    expect(text).toMatch(/qm_wakes_total\{model="vllm",result="ok"\} 1\n/);
    expect(text).toMatch(/qm_wakes_total\{model="broken",result="cold"\} 1\n/);
    expect(text).toMatch(/qm_model_state\{model="vllm",state="sleeping"\} 1\n/);
  });

  test("qm status shows it sleeping; an explicit unload ends its process", async () => {
    await answered("vllm");
    const pid = (await model("vllm")).pid!;
    await answered("other");
    await until(
      () => model("vllm"),
      (m) => m.state === "sleeping",
    );
    const cli = Bun.spawnSync([QM, "status", "--url", qm.url]);
    const table = cli.stdout.toString();
    expect(table).toMatch(/vllm\s+sleeping/);
    const res = await fetch(`${qm.url}/api/models/vllm/unload`, { method: "POST" });
    expect(res.status).toBeLessThan(300);
    await until(
      () => model("vllm"),
      (m) => m.state === "stopped",
    );
    await until(
      async () => alive(pid),
      (a) => !a,
    );
  });
});
