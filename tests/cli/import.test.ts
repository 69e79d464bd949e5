// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${PORT} and friends are macros, literal text here
/**
 * `qm import llama-swap`: a corpus of llama-swap configs written the way its README and
 * example config use every setting (tests/fixtures/llama-swap/); each import loads through
 * qm's real loader, and `qm config check` passes on it.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { importLlamaSwap } from "../../src/cli/import/llama-swap.ts";
import { expandSet } from "../../src/cli/import/matrix-dsl.ts";
import { tomlText, tomlValue } from "../../src/cli/import/toml-out.ts";
import type { Config } from "../../src/config/index.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { config as load } from "../support/config.ts";
import { QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

const CORPUS = join(ROOT, "tests/fixtures/llama-swap");
const FILES = readdirSync(CORPUS).filter((f) => f.endsWith(".yaml"));
/** What the corpus reads with ${env.NAME}. */
const ENV = { HOME: "/home/me", API_KEY_1: "sk-from-env", OPENROUTER_API_KEY: "sk-or" };

function imported(file: string): { toml: string; config: Config } {
  const toml = importLlamaSwap(parse(readFileSync(join(CORPUS, file), "utf8")), file);
  return { toml, config: load(toml, { file: `${file}.toml`, env: ENV }) };
}

describe("the corpus", () => {
  test.each(FILES)("%s imports to a config qm loads", (file) => {
    const { config } = imported(file);
    expect(Object.keys(config.models).length).toBeGreaterThan(0);
  });

  test("qm config check passes on every import, through the binary", { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-import-"));
    for (const file of FILES) {
      const run = Bun.spawnSync([QM, "import", "llama-swap", join(CORPUS, file)], { cwd: ROOT });
      expect({ file, code: run.exitCode, err: run.stderr.toString() }).toEqual({
        file,
        code: 0,
        err: "",
      });
      const out = join(dir, `${file}.toml`);
      writeFileSync(out, run.stdout);
      const check = Bun.spawnSync([QM, "config", "check", "-c", out], {
        cwd: ROOT,
        env: { ...process.env, ...ENV, QM_CONFIG: "" },
      });
      expect({ file, code: check.exitCode, out: check.stdout.toString() }).toEqual({
        file,
        code: 0,
        out: expect.stringContaining(`${out}: ok (`),
      });
    }
  });
});

describe("settings, one by one", () => {
  test("models: cmd (multi-line, comments kept for qm's splitter), ttl, aliases, env, limits", () => {
    const { config, toml } = imported("three-models.yaml");
    const llama = config.models["llama-3.1-8b"]!;
    expect(llama.argv).toEqual([
      "llama-server",
      "--port",
      String(llama.port),
      "-m",
      "/srv/models/Meta-Llama-3.1-8B-Instruct-Q5_K_M.gguf",
      "--ctx-size",
      "16384",
      "-ngl",
      "99",
      "--jinja",
    ]);
    expect(llama.ttlS).toBe(300);
    expect(llama.env).toEqual({ CUDA_VISIBLE_DEVICES: "0", GGML_CUDA_ENABLE_UNIFIED_MEMORY: "1" });
    expect(config.aliases).toEqual({ "gpt-4o-mini": "llama-3.1-8b", llama: "llama-3.1-8b" });
    const coder = config.models["qwen2.5-coder:7b"]!;
    expect(coder.ttlS).toBe(900); // ttl -1: globalTTL
    expect(coder.useModelName).toBe("qwen2.5-coder");
    expect(coder.concurrencyLimit).toBe(4);
    expect(coder.checkEndpoint).toBe("/health");
    expect(toml).toContain(
      "# llama-swap answered 429 past the limit; qm queues the excess instead",
    );
    const embed = config.models.embed!;
    expect(embed.ttlS).toBe(0);
    expect(embed.unlisted).toBe(true);
    expect(embed.params).toEqual({ strip: ["temperature", "top_p"], set: {} });
    expect(toml).toContain("# model and stream are never stripped: left out");
    expect(config.server.healthCheckTimeoutS).toBe(300);
    expect(config.server.logLevel).toBe("debug");
    expect(config.server.startPort).toBe(20000);
  });

  test("the full example: macros, filters, timeouts, cmdStop, preload, peers, and a comment for each setting with no equivalent", () => {
    const { config, toml } = imported("full.yaml");
    expect(Object.keys(config.models).sort()).toEqual([
      "docker-coder",
      "fixed-port",
      "gpt-oss-120b",
      "qwen-small",
    ]);
    const oss = config.models["gpt-oss-120b"]!;
    // Global macros stay macros; the model's own (ctx, temp) are written out in place.
    expect(oss.argv).toEqual([
      "/opt/llama.cpp/build/bin/llama-server",
      "--port",
      String(oss.port),
      "--model",
      "/home/me/models/gpt-oss-120b-mxfp4.gguf",
      "--ctx-size",
      "65536",
      "--temp",
      "1",
    ]);
    expect(oss.params).toEqual({
      strip: ["top_k", "min_p"],
      set: { temperature: 1, chat_template_kwargs: { reasoning_effort: "high" } },
    });
    expect(oss.useModelName).toBe("openai/gpt-oss-120b");
    expect(oss.firstByteTimeoutMs).toBe(300_000);
    expect(oss.stopTimeoutS).toBe(30);
    expect(oss.sendLoadingState).toBe(false);
    expect(oss.checkEndpoint).toBe("/v1/models");
    expect(oss.env).toEqual({ CUDA_VISIBLE_DEVICES: "0,1" });
    expect(config.aliases).toEqual({ "gpt-4o": "gpt-oss-120b", "o3-mini": "gpt-oss-120b" });
    expect(config.models["qwen-small"]!.argv.slice(-4)).toEqual([
      "--ctx-size",
      "8192",
      "--flash-attn",
      "on",
    ]);
    expect(config.models["qwen-small"]!.stopTimeoutS).toBe(15);
    expect(config.models["fixed-port"]!.proxy).toBe("http://127.0.0.1:8999");
    expect(config.models["docker-coder"]!.cmdStop).toBe("docker stop docker-coder");
    expect(config.server.apiKeys).toEqual(["sk-local-one"]);
    expect(config.server.preload).toEqual(["qwen-small"]);
    expect(config.server.healthCheckTimeoutS).toBe(15);
    expect(config.activity.size).toBe(500);
    expect(config.activity.capture).toBe(true);
    expect(Object.keys(config.peers)).toEqual(["workstation", "openrouter"]);
    expect(config.peers.openrouter).toMatchObject({
      url: "https://openrouter.ai/api",
      kind: "openai",
      apiKey: "sk-or",
      models: ["meta-llama/llama-3.3-70b-instruct"],
    });
    for (const setting of [
      "logTimeFormat",
      "logToStdout",
      "includeAliasesInList",
      "profiles",
      "filters.setParamsByID",
      "name",
      "description",
      "metadata",
      "timeouts",
      "alias gpt-4o",
      "hooks.on_startup.preload",
      "models.broken-entry",
      "peers.openrouter.filters",
      "peers.openrouter.timeouts",
      "peers.nothing-listed",
      "apiKeys",
    ]) {
      expect({ setting, commented: toml.includes(`\n# llama-swap ${setting} = `) }).toEqual({
        setting,
        commented: true,
      });
    }
    expect(toml).toContain("# llama-swap raised healthCheckTimeout = 10 to its minimum, 15");
  });

  test("groups keep swap/exclusive/persistent; members that name no model, or a second group, are left out", () => {
    const { config, toml } = imported("groups.yaml");
    expect(config.groups.coding).toMatchObject({
      members: ["coder", "draft"],
      swap: false,
      exclusive: true,
      persistent: false,
    });
    expect(config.groups["always-on"]).toMatchObject({
      members: ["embedder", "reranker"],
      swap: false,
      exclusive: false,
      persistent: true,
    });
    expect(config.groups.chats).toMatchObject({
      members: ["chat-big", "chat-small"],
      swap: true,
      exclusive: true,
    });
    expect(toml).toContain('# llama-swap member = "whisper": names no imported model; left out');
    expect(toml).toContain('# llama-swap member = "coder": already in group "coding"; left out');
  });

  test("the matrix: vars and set expressions become qm's sets; evict costs by model", () => {
    const { config, toml } = imported("matrix.yaml");
    expect(config.router.policy).toBe("matrix");
    expect(config.matrix.sets).toEqual([
      ["gemma"],
      ["qwen"],
      ["mistral"],
      ["gemma", "tts"],
      ["qwen", "tts"],
      ["mistral", "tts"],
      ["gemma", "tts", "rerank"],
      ["qwen", "tts", "rerank"],
      ["big"],
    ]);
    expect(config.matrix.evictCost).toEqual({ tts: 50, big: 30 });
    expect(toml).toContain(
      '# llama-swap matrix.sets.images = ["g","sd"]: names a var that is no imported model; left out',
    );
  });

  test("models on one fixed port, one at a time (the implicit swap group), import as they are", () => {
    const { config } = imported("shared-port.yaml");
    expect(Object.values(config.models).map((m) => [m.id, m.proxy, m.port])).toEqual([
      ["llama32:1b", "http://127.0.0.1:9999", null],
      ["qwen25:3b", "http://127.0.0.1:9999", null],
    ]);
    expect(config.models["llama32:1b"]!.argv[0]).toBe(
      "/Applications/App Name.app/Contents/bin/llama-server",
    );
  });

  test("not a llama-swap config: a sentence, not a stack trace", () => {
    expect(() => importLlamaSwap(["a"], "x.yaml")).toThrow(
      "x.yaml: not a llama-swap config (expected a mapping)",
    );
    expect(() => importLlamaSwap({ models: {} }, "x.yaml")).toThrow("x.yaml: no models to import");
    const dir = mkdtempSync(join(tmpdir(), "qm-import-"));
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "models:\n  a:\n    cmd: x\n   b: 1\n");
    const run = Bun.spawnSync([QM, "import", "llama-swap", bad], { cwd: ROOT });
    expect(run.exitCode).toBe(1);
    expect(run.stderr.toString()).toStartWith(
      `qm: ${bad}: not valid YAML: All mapping items must start at the same column at line 4, column 1`,
    );
    expect(Bun.spawnSync([QM, "import", "ollama", bad]).exitCode).toBe(2);
    expect(
      Bun.spawnSync([QM, "import", "llama-swap", join(dir, "none.yaml")]).stderr.toString(),
    ).toBe(`qm: ${join(dir, "none.yaml")}: no such file\n`);
  });
});

describe("pieces", () => {
  test("llama-swap's set expressions", () => {
    const sets = {
      a: "x | y",
      b: "(+a) & z",
      c: "(x | y) & (z | w)",
      d: "x & x",
      bad: "x & (y",
      loop: "+loop",
    };
    expect(expandSet("a", sets)).toEqual([["x"], ["y"]]);
    expect(expandSet("b", sets)).toEqual([
      ["x", "z"],
      ["y", "z"],
    ]);
    expect(expandSet("c", sets)).toEqual([
      ["x", "z"],
      ["x", "w"],
      ["y", "z"],
      ["y", "w"],
    ]);
    expect(expandSet("d", sets)).toEqual([["x"]]);
    expect(() => expandSet("bad", sets)).toThrow('a "(" is not closed in "x & (y"');
    expect(() => expandSet("loop", sets)).toThrow('set "loop" refers to itself');
  });

  test("TOML values: multi-line text as a literal string when it can be one, else escaped", () => {
    expect(tomlText("a\nb\n")).toBe("'''\na\nb\n'''");
    expect(tomlText("it's\nhere'")).toBe("\"it's\\nhere'\"");
    expect(tomlText("x'''y\n")).toBe("\"x'''y\\n\"");
    expect(tomlValue({ "a.b": [1, true, "s"], c: {} })).toBe('{ "a.b" = [1, true, "s"], c = {} }');
    expect(tomlValue({ a: null })).toBeNull();
  });
});
