import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mintVariant, parseVariantName, withContextSize } from "../../src/config/index.ts";
import { estimateVramGb, readGgufFile } from "../../src/gpu/gguf/index.ts";
import { Variants } from "../../src/runtime/variants.ts";
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
