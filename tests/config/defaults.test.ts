// biome-ignore-all lint/suspicious/noTemplateCurlyInString: templates keep ${PORT} etc. as literal text
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, DEFAULT_GROUP, loadConfigFile } from "../../src/config/index.ts";
import { defaultStateDir } from "../../src/config/load.ts";
import { load } from "./support.ts";

describe("defaults", () => {
  test("an empty file gives the defaults docs/config.md lists", () => {
    const config = load("");
    expect(config.file).toBe("quartermaster.toml");
    expect(config.server).toEqual({
      listen: ["127.0.0.1:8080"],
      metricsListen: "",
      metricsOnApi: false,
      apiKeys: [],
      startPort: 10001,
      healthCheckTimeoutS: 120,
      maxBodyBytes: 64 * 1024 * 1024,
      shutdownTimeoutS: 10,
      logLevel: "info",
      allowedHosts: [],
      corsOrigins: [],
      stateDir: defaultStateDir(),
      responsesStore: 200,
      responsesStoreBytes: 64 * 1024 * 1024,
      watchConfig: true,
    });
    expect(config.scheduler).toEqual({
      holdMs: 10000,
      patienceMs: 300000,
      holdOn: "tool_calls",
      holdPolicy: "cost",
      maxQueue: 512,
      fairShare: { enabled: true, weights: { interactive: 4, normal: 2, batch: 1 } },
    });
    expect(config.resources).toEqual({
      vramBudgetGb: 0,
      ramBudgetGb: 0,
      oomGuardReserveGb: 1.0,
      gpuProbe: "auto",
      gpuProbeIntervalMs: 2000,
    });
    expect(config.router).toEqual({ policy: "group" });
    expect(config.groups).toEqual({});
    expect(config.matrix).toEqual({ sets: [], evictCost: {} });
    expect(config.models).toEqual({});
    expect(config.peers).toEqual({});
    expect(config.macros).toEqual({});
    expect(config.aliases).toEqual({});
    expect(config.aliasPatterns).toEqual([]);
  });

  test("a model with only cmd gets every model default and the default group", () => {
    const config = load(`[models.m]\ncmd = "server"\n`);
    expect(config.models.m).toEqual({
      id: "m",
      cmd: "server",
      argv: ["server"],
      proxy: "http://127.0.0.1:10001",
      port: 10001,
      checkEndpoint: "/health",
      cmdStop: "",
      aliases: [],
      env: {},
      ttlS: 0,
      concurrencyLimit: 0,
      estVramGb: 0,
      estRamGb: 0,
      sendLoadingState: true,
      unlisted: false,
      useModelName: "",
      params: null,
      anthropicNative: false,
      evict: "stop",
      sleepLevel: 1,
      responsesNative: false,
      stopTimeoutS: 10,
      firstByteTimeoutMs: 600_000,
      stallTimeoutMs: 120_000,
      scrapeUpstreamMetrics: false,
      keepKv: null,
      ctxStep: 4096,
      prefetch: true,
      group: DEFAULT_GROUP,
      template: {
        cmd: "server",
        proxy: "http://127.0.0.1:${PORT}",
        checkEndpoint: "/health",
        cmdStop: "",
        useModelName: "",
        env: {},
      },
    });
    expect(config.groups).toEqual({
      [DEFAULT_GROUP]: {
        id: DEFAULT_GROUP,
        members: ["m"],
        swap: true,
        exclusive: true,
        persistent: false,
        pool: "vram",
      },
    });
  });

  test("peer and group defaults", () => {
    const config = load(`
[models.m]
cmd = "x"
[groups.g]
members = ["m"]
[peers.box2]
url = "http://10.0.0.2:8080"
models = ["big"]
`);
    expect(config.peers.box2).toEqual({
      id: "box2",
      url: "http://10.0.0.2:8080",
      kind: "openai",
      apiKey: "",
      models: ["big"],
      timeoutMs: 30_000,
      weight: 1,
      pollMs: 5000,
      node: null,
    });
    expect(config.groups).toEqual({
      g: { id: "g", members: ["m"], swap: true, exclusive: true, persistent: false, pool: "vram" },
    });
  });
});

describe("every key", () => {
  const everything = `
[server]
listen = ["127.0.0.1:9000", "[::1]:9001"]
metrics_listen = "127.0.0.1:9100"
api_keys = ["k1", "k2"]
start_port = 20000
health_check_timeout_s = 30
max_body_mb = 1.5
shutdown_timeout_s = 3
log_level = "debug"

[scheduler]
hold_ms = 0
patience_ms = 1000
hold_on = "request"

[resources]
vram_budget_gb = 24
ram_budget_gb = 64
oom_guard_reserve_gb = 0.5
gpu_probe = "off"
gpu_probe_interval_ms = 500

[router]
policy = "matrix"

[groups.gpu]
members = ["qwen-7b"]
swap = false
exclusive = false
persistent = true
pool = "ram"

[matrix]
sets = [["qwen-7b", "embed"], ["embed"]]
evict_cost = { "qwen-7b" = 30 }

[models.qwen-7b]
cmd = "llama-server --port \${PORT} -m \${models_dir}/qwen.gguf"
proxy = "http://localhost:\${PORT}/"
check_endpoint = "none"
cmd_stop = "kill -TERM \${PID}"
aliases = ["gpt-4o-mini"]
env = { CUDA_VISIBLE_DEVICES = "0" }
ttl_s = 300
concurrency_limit = 4
est_vram_gb = 6.5
est_ram_gb = 1
send_loading_state = false
unlisted = true
use_model_name = "qwen"
strip_params = ["top_k"]
set_params = { temperature = 0.6, chat_template_kwargs = { enable_thinking = false } }
anthropic_native = true
stop_timeout_s = 2
prefetch = false

[models.embed]
cmd = "embedder"
proxy = "https://embed.local:8443"

[peers.box2]
url = "http://10.0.0.2:8080/"
kind = "qm"
api_key = "secret"
models = ["llama-70b"]
timeout_s = 2.5
weight = 3
poll_s = 10

[macros]
models_dir = "/models"
`;

  test("are all accepted and mapped to the internal shape", () => {
    const config = load(everything);
    expect(config.server).toEqual({
      listen: ["127.0.0.1:9000", "[::1]:9001"],
      metricsListen: "127.0.0.1:9100",
      metricsOnApi: false,
      apiKeys: ["k1", "k2"],
      startPort: 20000,
      healthCheckTimeoutS: 30,
      maxBodyBytes: Math.round(1.5 * 1024 * 1024),
      shutdownTimeoutS: 3,
      logLevel: "debug",
      allowedHosts: [],
      corsOrigins: [],
      stateDir: defaultStateDir(),
      responsesStore: 200,
      responsesStoreBytes: 64 * 1024 * 1024,
      watchConfig: true,
    });
    expect(config.scheduler).toEqual({
      holdMs: 0,
      patienceMs: 1000,
      holdOn: "request",
      holdPolicy: "cost",
      maxQueue: 512,
      fairShare: { enabled: true, weights: { interactive: 4, normal: 2, batch: 1 } },
    });
    expect(config.resources).toEqual({
      vramBudgetGb: 24,
      ramBudgetGb: 64,
      oomGuardReserveGb: 0.5,
      gpuProbe: "off",
      gpuProbeIntervalMs: 500,
    });
    expect(config.router.policy).toBe("matrix");
    expect(config.groups.gpu).toEqual({
      id: "gpu",
      members: ["qwen-7b"],
      swap: false,
      exclusive: false,
      persistent: true,
      pool: "ram",
    });
    expect(config.groups[DEFAULT_GROUP]?.members).toEqual(["embed"]);
    expect(config.matrix).toEqual({
      sets: [["qwen-7b", "embed"], ["embed"]],
      evictCost: { "qwen-7b": 30 },
    });
    expect(config.models["qwen-7b"]).toEqual({
      id: "qwen-7b",
      cmd: "llama-server --port 20000 -m /models/qwen.gguf",
      argv: ["llama-server", "--port", "20000", "-m", "/models/qwen.gguf"],
      proxy: "http://localhost:20000",
      port: 20000,
      checkEndpoint: null,
      cmdStop: `kill -TERM \${PID}`,
      aliases: ["gpt-4o-mini"],
      env: { CUDA_VISIBLE_DEVICES: "0" },
      ttlS: 300,
      concurrencyLimit: 4,
      estVramGb: 6.5,
      estRamGb: 1,
      sendLoadingState: false,
      unlisted: true,
      useModelName: "qwen",
      params: {
        strip: ["top_k"],
        set: { temperature: 0.6, chat_template_kwargs: { enable_thinking: false } },
      },
      anthropicNative: true,
      evict: "stop",
      sleepLevel: 1,
      responsesNative: false,
      stopTimeoutS: 2,
      firstByteTimeoutMs: 600_000,
      stallTimeoutMs: 120_000,
      scrapeUpstreamMetrics: false,
      keepKv: null,
      ctxStep: 4096,
      prefetch: false,
      group: "gpu",
      template: {
        cmd: "llama-server --port ${PORT} -m /models/qwen.gguf",
        proxy: "http://localhost:${PORT}/",
        checkEndpoint: "none",
        cmdStop: "kill -TERM ${PID}",
        useModelName: "qwen",
        env: { CUDA_VISIBLE_DEVICES: "0" },
      },
    });
    expect(config.models.embed?.port).toBeNull();
    expect(config.models.embed?.proxy).toBe("https://embed.local:8443");
    expect(config.peers.box2).toEqual({
      id: "box2",
      url: "http://10.0.0.2:8080",
      kind: "qm",
      apiKey: "secret",
      models: ["llama-70b"],
      timeoutMs: 2500,
      weight: 3,
      pollMs: 10_000,
      node: null,
    });
    expect(config.macros).toEqual({ models_dir: "/models" });
    expect(config.aliases).toEqual({ "gpt-4o-mini": "qwen-7b" });
  });
});

describe("loadConfigFile", () => {
  test("reads the file and names it in Config.file", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-config-"));
    try {
      const path = join(dir, "qm.toml");
      writeFileSync(path, `[models.m]\ncmd = "x \${QM_BIN}"\n`);
      const config = loadConfigFile(path, { env: {}, qmBin: "/bin/qm", isPortFree: () => true });
      expect(config.file).toBe(path);
      expect(config.models.m?.argv).toEqual(["x", "/bin/qm"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a missing file is a ConfigError naming it, in a plain sentence", () => {
    const path = join(tmpdir(), "qm-config-does-not-exist", "qm.toml");
    let error: unknown;
    try {
      loadConfigFile(path, { env: {} });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const [issue] = (error as ConfigError).issues;
    expect(issue?.file).toBe(path);
    expect((error as ConfigError).format()).toBe(
      `${path}: no such config file (-c FILE or $QM_CONFIG names another; the quartermaster.toml shipped with qm is an example to start from)`,
    );
  });
});
