import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  contextSize,
  mintVariant,
  parseVariantName,
  withContextSize,
} from "../../src/config/index.ts";
import { estimateVramGb, readGgufFile } from "../../src/gpu/gguf/index.ts";
import { Variants } from "../../src/runtime/variants.ts";
import type { ModelState } from "../../src/scheduler/types.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { llama } from "../gpu/gguf/fake-models.ts";
import { writeModelFile } from "../gpu/gguf/gguf-writer.ts";
import { config } from "../support/config.ts";

describe("variant names and argv", () => {
  test("parseVariantName", () => {
    expect(parseVariantName("qwen?ctx=32768")).toEqual({ base: "qwen", ctx: 32768 });
    expect(parseVariantName("org/qwen:7b?ctx=4096")).toEqual({ base: "org/qwen:7b", ctx: 4096 });
    expect(parseVariantName("qwen")).toBeNull();
    expect(parseVariantName("qwen?ctx=")).toBeNull();
  });

  test("withContextSize rewrites an existing flag in either form, or appends one", () => {
    expect(withContextSize(["s", "--ctx-size", "8192", "-ngl", "99"], 4096)).toEqual([
      "s",
      "--ctx-size",
      "4096",
      "-ngl",
      "99",
    ]);
    expect(withContextSize(["s", "-c", "8192"], 4096)).toEqual(["s", "-c", "4096"]);
    expect(withContextSize(["s", "--ctx-size=8192"], 4096)).toEqual(["s", "--ctx-size=4096"]);
    expect(withContextSize(["s", "-m", "x.gguf"], 4096)).toEqual([
      "s",
      "-m",
      "x.gguf",
      "--ctx-size",
      "4096",
    ]);
  });

  test("a vLLM command gets --max-model-len, rewritten or added; -c there is not a context flag", () => {
    expect(withContextSize(["vllm", "serve", "m", "--max-model-len", "8192"], 4096)).toEqual([
      "vllm",
      "serve",
      "m",
      "--max-model-len",
      "4096",
    ]);
    expect(withContextSize(["/opt/venv/bin/vllm", "serve", "m", "-c", "x.yaml"], 4096)).toEqual([
      "/opt/venv/bin/vllm",
      "serve",
      "m",
      "-c",
      "x.yaml",
      "--max-model-len",
      "4096",
    ]);
    expect(
      withContextSize(
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--max-model-len=2"],
        9,
      ),
    ).toEqual(["python", "-m", "vllm.entrypoints.openai.api_server", "--max-model-len=9"]);
  });

  test("contextSize reads the context flag in either form; vLLM's own; none is null", () => {
    expect(contextSize(["s", "-c", "8192"])).toBe(8192);
    expect(contextSize(["s", "--ctx-size=4096", "-m", "x"])).toBe(4096);
    expect(contextSize(["vllm", "serve", "m", "-c", "x.yaml", "--max-model-len", "9000"])).toBe(
      9000,
    );
    expect(contextSize(["s", "-m", "x.gguf"])).toBeNull();
    expect(contextSize(["s", "-c"])).toBeNull();
  });

  test("mintVariant re-expands the template with its own port, in the base's group, unlisted", () => {
    const cfg = config(`
[server]
start_port = 20000
[groups.g]
members = ["q"]
[models.q]
cmd = "llama-server --port \${PORT} -m /m/q.gguf --ctx-size 8192 --alias \${MODEL_ID}"
aliases = ["gpt"]
est_vram_gb = 6
`);
    const v = mintVariant(cfg.models.q!, { ctx: 32768, port: 20123, estVramGb: 9.5 });
    expect(v.id).toBe("q?ctx=32768");
    expect(v.argv).toEqual([
      "llama-server",
      "--port",
      "20123",
      "-m",
      "/m/q.gguf",
      "--ctx-size",
      "32768",
      "--alias",
      "q",
    ]);
    expect(v.proxy).toBe("http://127.0.0.1:20123");
    expect(v.port).toBe(20123);
    expect(v).toMatchObject({ group: "g", aliases: [], unlisted: true, estVramGb: 9.5 });
    expect(v.variantOf).toEqual({ base: "q", ctx: 32768 });
  });
});

describe("Variants", () => {
  test("sizes a variant from its GGUF header at the asked context, once per size", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-variant-"));
    const path = join(dir, "tiny.gguf");
    await writeModelFile(
      path,
      llama({
        layers: 32,
        embd: 4096,
        heads: 32,
        kvHeads: 8,
        ffn: 128,
        vocab: 1000,
        ctxLen: 65536,
      }),
    );
    const cfg = config(
      `[models.t]\ncmd = "llama-server --port \${PORT} -m ${path}"\nest_vram_gb = 1\n`,
    );
    const registered: string[] = [];
    const variants = new Variants(cfg, silentLogger, (m) => {
      cfg.models[m.id] = m;
      registered.push(m.id);
    });
    const [a, b] = await Promise.all([
      variants.get(cfg.models.t!, 32768),
      variants.get(cfg.models.t!, 32768),
    ]);
    expect(a).toBe(b);
    expect(registered).toEqual(["t?ctx=32768"]);
    const header = await readGgufFile(path);
    if (!header.ok) throw new Error(header.reason);
    expect(a.estVramGb).toBe(estimateVramGb(header.header, 32768));
    expect(a.estVramGb).toBeGreaterThan(estimateVramGb(header.header, 4096));
    expect(a.argv.slice(-2)).toEqual(["--ctx-size", "32768"]);
    expect(a.port).not.toBe(cfg.models.t!.port);
  });

  test("an unreadable model file leaves the estimate unknown (0) rather than guessing", async () => {
    const cfg = config(
      `[models.t]\ncmd = "llama-server --port \${PORT} -m /nonexistent.gguf"\nest_vram_gb = 6\n`,
    );
    const variants = new Variants(cfg, silentLogger, (m) => {
      cfg.models[m.id] = m;
    });
    expect((await variants.get(cfg.models.t!, 4096)).estVramGb).toBe(0);
  });

  test("bad sizes and variants of variants are clear 400s", async () => {
    const cfg = config(`[models.t]\ncmd = "x --port \${PORT}"\n`);
    const variants = new Variants(cfg, silentLogger, (m) => {
      cfg.models[m.id] = m;
    });
    expect(() => variants.get(cfg.models.t!, 10)).toThrow("ctx must be a whole number");
    const v = await variants.get(cfg.models.t!, 4096);
    expect(() => variants.get(v, 8192)).toThrow('ask for "t?ctx=8192"');
  });
});

/** A `Variants` over `toml` whose models' states a test sets; unloads are recorded. */
function chooser(toml: string) {
  const cfg = config(toml);
  const states = new Map<string, ModelState>();
  const unloaded: string[] = [];
  const minted: string[] = [];
  const variants = new Variants(
    cfg,
    silentLogger,
    (m) => {
      cfg.models[m.id] = m;
      minted.push(m.id);
    },
    () => true,
    { state: (id) => states.get(id) ?? "stopped", unload: (id) => unloaded.push(id) },
  );
  const get = async (ctx: number) => (await variants.get(cfg.models.t!, ctx)).id;
  return { cfg, states, unloaded, minted, get };
}

const LLAMA_4K = `cmd = "llama-server --port \${PORT} -m /nonexistent.gguf --ctx-size 4096"`;

describe("Variants: what serves a context size", () => {
  test("rounds up to ctx_step; one variant per rounded size", async () => {
    const v = chooser(`[models.t]\n${LLAMA_4K}\n`);
    expect(await v.get(8933)).toBe("t?ctx=12288");
    expect(await v.get(8964)).toBe("t?ctx=12288");
    expect(await v.get(12288)).toBe("t?ctx=12288");
    expect(await v.get(12289)).toBe("t?ctx=16384");
    expect(v.minted).toEqual(["t?ctx=12288", "t?ctx=16384"]);
    const exact = chooser(`[models.t]\n${LLAMA_4K}\nctx_step = 1\n`);
    expect(await exact.get(8933)).toBe("t?ctx=8933");
    const k = chooser(`[models.t]\n${LLAMA_4K}\nctx_step = 1000\n`);
    expect(await k.get(8933)).toBe("t?ctx=9000");
  });

  test("a running model at least as large serves: ready, then starting, then sleeping; the smallest first", async () => {
    const v = chooser(`[models.t]\n${LLAMA_4K}\n`);
    for (const n of [8192, 12288, 16384]) await v.get(n);
    v.minted.length = 0;
    v.states.set("t?ctx=16384", "ready");
    expect(await v.get(5000)).toBe("t?ctx=16384");
    v.states.set("t?ctx=12288", "starting");
    expect(await v.get(5000)).toBe("t?ctx=16384"); // ready before starting
    v.states.set("t?ctx=12288", "ready");
    expect(await v.get(5000)).toBe("t?ctx=12288"); // the smallest of the ready ones
    expect(await v.get(13000)).toBe("t?ctx=16384");
    v.states.clear();
    v.states.set("t?ctx=16384", "sleeping");
    expect(await v.get(9000)).toBe("t?ctx=16384");
    v.states.set("t?ctx=12288", "starting");
    expect(await v.get(9000)).toBe("t?ctx=12288");
    // The base counts with its own flag: up at 4096, it serves anything up to that.
    v.states.clear();
    v.states.set("t", "ready");
    expect(await v.get(3000)).toBe("t");
    // Nothing up is large enough: the variant at the rounded size (minted before, not again).
    expect(await v.get(5000)).toBe("t?ctx=8192");
    expect(v.minted).toEqual([]);
    expect(v.unloaded).toEqual([]);
  });

  test("the base serves when its own context suffices; without a context flag it never counts", async () => {
    const v = chooser(`[models.t]\ncmd = "llama-server --port \${PORT} -c 8192"\n`);
    expect(await v.get(6000)).toBe("t");
    expect(await v.get(8192)).toBe("t");
    expect(await v.get(9000)).toBe("t?ctx=12288");
    const bare = chooser(`[models.t]\ncmd = "llama-server --port \${PORT}"\n`);
    bare.states.set("t", "ready");
    expect(await bare.get(1024)).toBe("t?ctx=4096");
  });

  test("one live variant per model: starting another unloads the live ones, unless a swap or a budget decides", async () => {
    const own = `[groups.g]\nmembers = ["t"]\nswap = false\n[models.t]\n${LLAMA_4K}\n`;
    const v = chooser(own);
    await v.get(8192);
    v.states.set("t?ctx=8192", "ready");
    v.states.set("t", "ready"); // the base is no variant: it stays
    expect(await v.get(10000)).toBe("t?ctx=12288");
    expect(v.unloaded).toEqual(["t?ctx=8192"]);
    // Served by a live one: nothing goes.
    v.unloaded.length = 0;
    v.states.set("t?ctx=12288", "ready");
    expect(await v.get(9000)).toBe("t?ctx=12288");
    expect(v.unloaded).toEqual([]);
    // One still starting is left alone (its waiters would fail); a sleeping one goes.
    v.states.set("t?ctx=8192", "starting");
    v.states.set("t?ctx=12288", "sleeping");
    expect(await v.get(15000)).toBe("t?ctx=16384");
    expect(v.unloaded).toEqual(["t?ctx=12288"]);

    // A swapping group (the default) evicts them with the start itself.
    const swapping = chooser(`[models.t]\n${LLAMA_4K}\n`);
    await swapping.get(8192);
    swapping.states.set("t?ctx=8192", "ready");
    expect(await swapping.get(10000)).toBe("t?ctx=12288");
    expect(swapping.unloaded).toEqual([]);

    // A budget admits by size when the variant's estimate is known; unknown, they go.
    const unknown = chooser(`[resources]\nvram_budget_gb = 24\n${own}`);
    await unknown.get(8192);
    unknown.states.set("t?ctx=8192", "ready");
    await unknown.get(10000);
    expect(unknown.unloaded).toEqual(["t?ctx=8192"]);
  });

  test("under a budget, variants with a known estimate stay while they fit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-variant-"));
    const path = join(dir, "tiny.gguf");
    await writeModelFile(
      path,
      llama({ layers: 4, embd: 256, heads: 4, kvHeads: 4, ffn: 64, vocab: 100, ctxLen: 65536 }),
    );
    const v = chooser(`[resources]
vram_budget_gb = 24
[groups.g]
members = ["t"]
swap = false
[models.t]
cmd = "llama-server --port \${PORT} -m ${path} -c 4096"
`);
    await v.get(8192);
    v.states.set("t?ctx=8192", "ready");
    expect(await v.get(10000)).toBe("t?ctx=12288");
    expect(v.cfg.models["t?ctx=12288"]!.estVramGb).toBeGreaterThan(0);
    expect(v.unloaded).toEqual([]);
  });
});
