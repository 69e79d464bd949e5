import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { llama } from "../gpu/gguf/fake-models.ts";
import { writeModelFile } from "../gpu/gguf/gguf-writer.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status } from "../support/e2e.ts";
import { QM, type QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: each variant is a model process of its own.
setDefaultTimeout(20_000);

let qm: QmServer;
const dir = mkdtempSync(join(tmpdir(), "qm-variants-"));
const gguf = join(dir, "model.gguf");

beforeAll(async () => {
  // A sparse file with a real GGUF header shaped like an 8B model: sized, never loaded.
  await writeModelFile(
    gguf,
    llama({ layers: 32, embd: 4096, heads: 32, kvHeads: 8, ffn: 128, vocab: 1000, ctxLen: 131072 }),
  );
  // Ollama's num_ctx is honoured for llama-server: the demo model, run under that name.
  const wrapper = join(dir, "llama-server");
  writeFileSync(wrapper, `#!/bin/sh\nexec "${QM}" demo-upstream "$@"\n`);
  chmodSync(wrapper, 0o755);
  qm = await serve(`
[models.llm]
cmd = "\${demo} -m ${gguf} --ctx-size 8192"
est_vram_gb = 2

[models.aider]
cmd = "${wrapper} --port \${PORT} --name aider --ctx-size 4096 --token-ms 0"
unlisted = true
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

describe("model?ctx=N", () => {
  test("mints a variant with its own process, context size and re-sized estimate", async () => {
    const res = await chat(qm.url, "llm?ctx=32768");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("llm?ctx=32768");
    await res.json();
    const s = await status(qm.url);
    const v = s.models.find((m) => m.id === "llm?ctx=32768")!;
    expect(v.state).toBe("ready");
    expect(v.est_vram_gb).toBeGreaterThan(2); // 32k of KV cache is 4 GB on its own
    const props = await fetch(`${qm.url}/upstream/${encodeURIComponent("llm?ctx=32768")}/props`);
    const body = (await props.json()) as {
      default_generation_settings: { n_ctx: number };
      model_path: string;
    };
    expect(body.default_generation_settings.n_ctx).toBe(32768);
    expect(body.model_path).toBe(gguf);
  });

  test("the same size again reuses the variant; the base and the variant swap like group members", async () => {
    await (await chat(qm.url, "llm?ctx=32768")).json();
    await (await chat(qm.url, "llm")).json();
    const s = await status(qm.url);
    expect(s.models.filter((m) => m.id.startsWith("llm?ctx=")).map((m) => m.id)).toEqual([
      "llm?ctx=32768",
    ]);
    expect(s.models.find((m) => m.id === "llm")?.state).toBe("ready");
    expect(s.models.find((m) => m.id === "llm?ctx=32768")?.state).toBe("stopped");
  });

  test("a bad size is a clear 400, and an unknown base a 404", async () => {
    const bad = await chat(qm.url, "llm?ctx=12");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain(
      "ctx must be",
    );
    expect((await chat(qm.url, "nope?ctx=4096")).status).toBe(404);
  });

  test("num_ctx growing by a few tokens a turn reloads only at step boundaries", async () => {
    const ask = async (numCtx: number) => {
      const res = await fetch(`${qm.url}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "aider",
          stream: false,
          options: { num_ctx: numCtx },
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      expect(res.status).toBe(200);
      await res.json();
      const s = await status(qm.url);
      return s.models
        .filter((m) => m.id.startsWith("aider") && m.state === "ready")
        .map((m) => m.id);
    };
    // aider's sizes: the prompt's tokens plus room to answer, a little more every message.
    expect(await ask(8933)).toEqual(["aider?ctx=12288"]);
    expect(await ask(8964)).toEqual(["aider?ctx=12288"]);
    // A smaller size is served by the larger variant that runs, not by the base.
    expect(await ask(3000)).toEqual(["aider?ctx=12288"]);
    expect(await ask(12289)).toEqual(["aider?ctx=16384"]);
    const starts = (id: string) => qm.log().split(`starting model "${id}"`).length - 1;
    expect([starts("aider"), starts("aider?ctx=12288"), starts("aider?ctx=16384")]).toEqual([
      0, 1, 1,
    ]);
    const s = await status(qm.url);
    expect(s.models.filter((m) => m.id.startsWith("aider?ctx=")).map((m) => m.id)).toEqual([
      "aider?ctx=12288",
      "aider?ctx=16384",
    ]);
  });

  test("variants stay out of GET /v1/models", async () => {
    const list = (await (await fetch(`${qm.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(list.data.map((m) => m.id)).toEqual(["llm"]);
  });
});
