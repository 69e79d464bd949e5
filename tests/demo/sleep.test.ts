/** The demo upstream's `--sleep-mode` (vLLM's sleep API), and qm's client of that API. */
import { afterEach, describe, expect, test } from "bun:test";
import { DEFAULT_DEMO_OPTIONS, type DemoOptions, parseDemoFlags } from "../../src/demo/flags.ts";
import { type DemoServer, startDemoServer } from "../../src/demo/server.ts";
import { isSleeping, sleepServer, wakeServer } from "../../src/process/sleep-api.ts";

const servers: DemoServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

function start(over: Partial<DemoOptions> = {}): DemoServer {
  const s = startDemoServer(
    {
      ...DEFAULT_DEMO_OPTIONS,
      name: "d",
      tokenMs: 0,
      tokens: 4,
      sleepMode: true,
      wakeMs: 0,
      ...over,
    },
    { crash: () => {} },
  );
  servers.push(s);
  return s;
}

const chat = (url: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "d", messages: [{ role: "user", content: "hi" }] }),
  });

describe("demo upstream --sleep-mode", () => {
  test("flags: --sleep-mode, --wake-ms, --fail-wake", () => {
    const r = parseDemoFlags(["--sleep-mode", "--wake-ms", "250", "--fail-wake"]);
    expect(r).toMatchObject({
      kind: "run",
      options: { sleepMode: true, wakeMs: 250, failWake: true },
    });
    expect(parseDemoFlags(["--sleep-mode=1"]).kind).toBe("error");
  });

  test("sleep → is_sleeping true and inference 503; wake → served again", async () => {
    const s = start();
    expect(await (await fetch(`${s.url}/is_sleeping`)).json()).toEqual({ is_sleeping: false });
    expect((await fetch(`${s.url}/sleep?level=1`, { method: "POST" })).status).toBe(200);
    expect(await (await fetch(`${s.url}/is_sleeping`)).json()).toEqual({ is_sleeping: true });
    const refused = await chat(s.url);
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain("sleeping");
    expect((await fetch(`${s.url}/wake_up`, { method: "POST" })).status).toBe(200);
    expect((await chat(s.url)).status).toBe(200);
  });

  test("a bad level is a 400; wrong methods are 405; without --sleep-mode the routes are 404", async () => {
    const s = start();
    expect((await fetch(`${s.url}/sleep?level=3`, { method: "POST" })).status).toBe(400);
    expect((await fetch(`${s.url}/sleep`)).status).toBe(405);
    expect((await fetch(`${s.url}/is_sleeping`, { method: "POST" })).status).toBe(405);
    const plain = start({ sleepMode: undefined });
    expect((await fetch(`${plain.url}/sleep?level=1`, { method: "POST" })).status).toBe(404);
  });

  test("--fail-wake: /wake_up answers 500 and it stays asleep", async () => {
    const s = start({ failWake: true });
    await fetch(`${s.url}/sleep?level=2`, { method: "POST" });
    expect((await fetch(`${s.url}/wake_up`, { method: "POST" })).status).toBe(500);
    expect(await (await fetch(`${s.url}/is_sleeping`)).json()).toEqual({ is_sleeping: true });
  });
});

describe("qm's sleep API client (src/process/sleep-api.ts)", () => {
  const call = (base: string, timeoutMs = 2000) => ({ model: "m", base, timeoutMs });

  test("sleep and wake, each confirmed by /is_sleeping", async () => {
    const s = start();
    await sleepServer(call(s.url), 2);
    expect(await isSleeping(call(s.url))).toBe(true);
    await wakeServer(call(s.url));
    expect(await isSleeping(call(s.url))).toBe(false);
  });

  test("a failing wake rejects, naming the model and the answer", async () => {
    const s = start({ failWake: true });
    await sleepServer(call(s.url), 1);
    await expect(wakeServer(call(s.url))).rejects.toThrow(/model "m" could not be woken.*500/);
  });

  test("a server without the API rejects the sleep (404), and a slow wake past its bound", async () => {
    const plain = start({ sleepMode: undefined });
    await expect(sleepServer(call(plain.url), 1)).rejects.toThrow(/put to sleep.*404/);
    const slow = start({ wakeMs: 5000 });
    await sleepServer(call(slow.url), 1);
    await expect(wakeServer(call(slow.url, 50))).rejects.toThrow(/no answer within 50 ms/);
  });

  test("a server that answers 200 but does not sleep is not believed", async () => {
    const liar = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) =>
        new URL(req.url).pathname === "/is_sleeping"
          ? Response.json({ is_sleeping: false })
          : new Response(null),
    });
    try {
      await expect(sleepServer(call(`http://127.0.0.1:${liar.port}`), 1)).rejects.toThrow(
        /still says false/,
      );
    } finally {
      await liar.stop(true);
    }
  });
});
