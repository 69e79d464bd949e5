/**
 * keep_kv end to end, from dist/qm: a "llama-server" (the demo upstream with `--slots`, under
 * that name) swapped away and back gets its slot restored before the next request is let in;
 * the same model without keep_kv comes back cold.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { configFile, postJson, until } from "../support/e2e.ts";
import { QM, type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

let qm: QmServer;
let stateDir: string;
let configPath: string;

beforeAll(async () => {
  const cfg = configFile((dir) => {
    // qm only keeps the KV of llama-server: the demo upstream, run under that name.
    const wrapper = join(dir, "llama-server");
    writeFileSync(wrapper, `#!/bin/sh\nexec "${QM}" demo-upstream "$@"\n`);
    chmodSync(wrapper, 0o755);
    const cmd = (id: string) => `${wrapper} --port \${PORT} --name ${id} --token-ms 0 --slots`;
    return `
[models.warm]
cmd = "${cmd("warm")}"
keep_kv = true

[models.cold]
cmd = "${cmd("cold")}"

[models.other]
cmd = "\${demo} --token-ms 0"
`;
  });
  stateDir = cfg.stateDir;
  configPath = cfg.path;
  qm = await startQm(cfg.path);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const system = "You are an agent. ".repeat(500); // ~2 250 tokens as the demo counts them

async function turn(model: string, user: string): Promise<number> {
  const res = await postJson(qm.url, "/v1/chat/completions", {
    model,
    messages: [
      { role: "system", content: system },
      { role: "user", content: user },
    ],
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    usage: { prompt_tokens_details?: { cached_tokens: number } };
  };
  return body.usage.prompt_tokens_details?.cached_tokens ?? -1;
}

describe("keep_kv", () => {
  test("a swap away and back restores the slot before the next request", async () => {
    expect(await turn("warm", "turn 1")).toBe(0);
    expect(await turn("warm", "turn 2")).toBeGreaterThan(2000); // warm in the same process
    expect(await turn("other", "elsewhere")).toBe(-1); // the swap stops "warm": slots saved
    const dir = join(stateDir, "kv", "warm");
    expect(existsSync(join(dir, "slot-0.bin"))).toBe(true);
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
    expect(manifest.slots["0"].tokens).toBeGreaterThan(2000);
    await qm.waitLog('model "warm": KV of slot 0 saved');
    // Back on a fresh process: the prompt's prefix is already there.
    expect(await turn("warm", "turn 3")).toBeGreaterThan(2000);
    await qm.waitLog('model "warm": KV of slot 0 restored');
  });

  test("an unchanged reload restarts nothing and keeps the saved cache", async () => {
    // "warm" runs on its ${PORT}; the reloaded config hands ports out afresh around it.
    const res = await postJson(qm.url, "/api/config/reload");
    expect(res.status).toBe(200);
    const { changes } = (await res.json()) as { changes: Record<string, unknown> };
    expect(changes.restart_pending).toEqual({});
    expect(await turn("other", "elsewhere")).toBe(-1);
    expect(await turn("warm", "turn 3b")).toBeGreaterThan(2000);
    expect(qm.log()).not.toContain("saved KV cache removed");
  });

  test("without keep_kv the same swap comes back cold", async () => {
    expect(await turn("cold", "turn 1")).toBe(0);
    expect(await turn("cold", "turn 2")).toBeGreaterThan(2000);
    await turn("other", "elsewhere");
    expect(await turn("cold", "turn 3")).toBe(0);
    expect(existsSync(join(stateDir, "kv", "cold"))).toBe(false);
  });

  test("a config change drops the saved cache: the next start is cold", async () => {
    // "warm" was stopped by the swaps above, its slot saved.
    const dir = join(stateDir, "kv", "warm");
    expect(existsSync(join(dir, "slot-0.bin"))).toBe(true);
    const text = readFileSync(configPath, "utf8");
    writeFileSync(
      configPath,
      text.replace("--name warm --token-ms 0", "--name warm --token-ms 0 --tokens 5"),
    );
    const res = await postJson(qm.url, "/api/config/reload");
    expect(res.status).toBe(200);
    await until(
      async () => qm.log(),
      (log) => log.includes("config reloaded"),
    );
    expect(await turn("warm", "turn 4")).toBe(0);
    await qm.waitLog('model "warm": saved KV cache removed');
    expect(readdirSync(dir).includes("slot-0.bin")).toBe(false);
  });

  test("a reload that removes the model deletes its folder once it has stopped", async () => {
    // "warm" runs (turn 4 started it), with a cached prompt its stop will save.
    const dir = join(stateDir, "kv", "warm");
    const text = readFileSync(configPath, "utf8");
    writeFileSync(configPath, text.replace(/\[models\.warm\][^[]*/, ""));
    const res = await postJson(qm.url, "/api/config/reload");
    expect(((await res.json()) as { changes: { removed: string[] } }).changes.removed).toEqual([
      "warm",
    ]);
    await qm.waitLog(`keep_kv: removed ${dir}`);
    expect(existsSync(dir)).toBe(false);
  });
});
