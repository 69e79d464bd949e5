/** The demo upstream's `--slots`: llama-server's slot API, enough for keep_kv end to end. */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_DEMO_OPTIONS, type DemoOptions, parseDemoFlags } from "../../src/demo/flags.ts";
import { type DemoServer, startDemoServer } from "../../src/demo/server.ts";

const servers: DemoServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function demo(over: Partial<DemoOptions> = {}): DemoServer {
  const s = startDemoServer(
    { ...DEFAULT_DEMO_OPTIONS, tokenMs: 0, tokens: 4, slots: true, ...over },
    { crash: () => {} },
  );
  servers.push(s);
  return s;
}

const post = (s: DemoServer, path: string, body: unknown) =>
  fetch(s.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const long = "x".repeat(4000);
const turn = (more: string) => ({
  model: "demo",
  messages: [
    { role: "system", content: long },
    { role: "user", content: more },
  ],
});

async function cachedTokens(s: DemoServer, more: string): Promise<number> {
  const res = await post(s, "/v1/chat/completions", turn(more));
  const body = (await res.json()) as {
    usage: { prompt_tokens_details: { cached_tokens: number } };
  };
  return body.usage.prompt_tokens_details.cached_tokens;
}

describe("--slots", () => {
  test("flags: --slots and --slot-save-path (a / added)", () => {
    const r = parseDemoFlags(["--slots", "--slot-save-path", "/tmp/kv"]);
    expect(r).toMatchObject({ kind: "run", options: { slots: true, slotSavePath: "/tmp/kv/" } });
  });

  test("a slot's prompt is reported, saved to a file and restored by a fresh server", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-demo-slots-"));
    dirs.push(dir);
    const a = demo({ slotSavePath: `${dir}/` });
    // Unused: no prompt fields, like llama-server's slot before its first task.
    expect(await (await fetch(`${a.url}/slots`)).json()).toEqual([
      { id: 0, n_ctx: 4096, speculative: false, is_processing: false },
    ]);
    expect(await cachedTokens(a, "one")).toBe(0);
    expect(await cachedTokens(a, "two")).toBeGreaterThan(1000);
    const [slot] = (await (await fetch(`${a.url}/slots`)).json()) as { n_prompt_tokens: number }[];
    expect(slot!.n_prompt_tokens).toBeGreaterThan(1000);
    const saved = await post(a, "/slots/0?action=save", { filename: "slot-0.bin" });
    expect(await saved.json()).toMatchObject({ id_slot: 0, n_saved: slot!.n_prompt_tokens });
    expect(readdirSync(dir)).toEqual(["slot-0.bin"]);

    const b = demo({ slotSavePath: `${dir}/` });
    expect(await cachedTokens(b, "three")).toBe(0); // cold
    const c = demo({ slotSavePath: `${dir}/` });
    const restored = await post(c, "/slots/0?action=restore", { filename: "slot-0.bin" });
    expect(await restored.json()).toMatchObject({ id_slot: 0, n_restored: slot!.n_prompt_tokens });
    expect(await cachedTokens(c, "three")).toBeGreaterThan(1000);
  });

  test("bad requests answer as llama-server does", async () => {
    const none = demo();
    expect((await post(none, "/slots/0?action=save", { filename: "f" })).status).toBe(501);
    const dir = mkdtempSync(join(tmpdir(), "qm-demo-slots-"));
    dirs.push(dir);
    const s = demo({ slotSavePath: `${dir}/` });
    expect((await post(s, "/slots/0?action=save", { filename: "../x" })).status).toBe(400);
    expect((await post(s, "/slots/0?action=save", {})).status).toBe(400);
    expect((await post(s, "/slots/3?action=save", { filename: "f" })).status).toBe(400);
    expect((await post(s, "/slots/0?action=explode", { filename: "f" })).status).toBe(400);
    expect((await post(s, "/slots/0?action=restore", { filename: "missing" })).status).toBe(400);
    expect((await fetch(`${s.url}/slots`, { method: "DELETE" })).status).toBe(405);
    // Without --slots there is no such route.
    const off = demo({ slots: undefined });
    expect((await fetch(`${off.url}/slots`)).status).toBe(404);
  });
});
