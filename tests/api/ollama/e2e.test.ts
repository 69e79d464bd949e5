/**
 * The ollama npm client against a real `qm serve` and the demo upstream, over sockets: the
 * scheduler's side of `keep_alive` (0 unloads, a duration shows in `/api/ps`, load/unload by
 * an empty request) and a real stream.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Ollama } from "ollama";
import { BUILD_TIMEOUT_MS, needsBinary } from "../../support/binary.ts";
import { serve, status, until } from "../../support/e2e.ts";
import type { QmServer } from "../../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads and streams take real time.
setDefaultTimeout(20_000);

let qm: QmServer;
let ollama: Ollama;

beforeAll(async () => {
  qm = await serve(`
[models.chat]
cmd = "\${demo} --token-ms 1 --tokens 5"
ttl_s = 600

[models.embed]
cmd = "\${demo}"
capabilities = ["embedding"]

[models.thinker]
cmd = "\${demo} --ctx-size 4096 --reasoning 3 --tool-calls --slots --slot-save-path /tmp/qm-sekrit123"
env = { HF_TOKEN = "hf_envsecret" }
`);
  ollama = new Ollama({ host: qm.url });
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const stateOf = async (id: string) => (await status(qm.url)).models.find((m) => m.id === id)?.state;

describe("ollama client against qm serve", () => {
  test("version, capabilities (config, then the running server's /props) and no command shown", async () => {
    expect(await ollama.version()).toEqual({ version: "0.13.5" });
    expect((await ollama.show({ model: "embed" })).capabilities).toEqual(["embedding"]);
    // Not running: the command says nothing of tools being off.
    expect((await ollama.show({ model: "thinker" })).capabilities).toEqual(["completion", "tools"]);
    await ollama.generate({ model: "thinker", prompt: "" });
    const shown = await ollama.show({ model: "thinker" });
    expect(shown.capabilities).toEqual(["completion", "tools", "thinking"]);
    const text = JSON.stringify(shown);
    for (const secret of ["sekrit123", "hf_envsecret", "demo-upstream", "--ctx-size"]) {
      expect({ secret, shown: text.includes(secret) }).toEqual({ secret, shown: false });
    }
  });

  test("a streamed chat; keep_alive sets /api/ps expires_at; keep_alive 0 unloads after the answer", async () => {
    let text = "";
    let done = false;
    for await (const part of await ollama.chat({
      model: "chat",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      keep_alive: "2h",
    })) {
      text += part.message.content;
      done = part.done;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(done).toBe(true);
    const ps = await until(
      () => ollama.ps(),
      (p) => p.models.some((m) => m.name === "chat"),
    );
    const left =
      new Date(ps.models.find((m) => m.name === "chat")!.expires_at).getTime() - Date.now();
    expect(left).toBeGreaterThan(7_000_000); // 2 h, not ttl_s's 10 min
    expect(left).toBeLessThanOrEqual(7_200_000);
    await ollama.chat({
      model: "chat",
      messages: [{ role: "user", content: "bye" }],
      keep_alive: 0,
    });
    await until(
      () => stateOf("chat"),
      (s) => s === "stopped",
    );
  });

  test("an empty request loads the model; keep_alive 0 alone unloads it", async () => {
    const load = await ollama.generate({ model: "chat", prompt: "" });
    expect(load.done_reason).toBe("load");
    expect(await stateOf("chat")).toBe("ready");
    const unload = await ollama.generate({ model: "chat", prompt: "", keep_alive: 0 });
    expect(unload.done_reason).toBe("unload");
    await until(
      () => stateOf("chat"),
      (s) => s === "stopped",
    );
  });

  test("embed through the demo upstream", async () => {
    const res = await ollama.embed({ model: "embed", input: ["a", "b"] });
    expect(res.embeddings).toHaveLength(2);
    expect(res.embeddings[0]!.length).toBeGreaterThan(0);
  });
});
