// biome-ignore-all lint/suspicious/noTemplateCurlyInString: qm macros are written ${NAME}; these strings are TOML and expected messages, not JS templates.
import { describe, expect, test } from "bun:test";
import { errors, load } from "./support.ts";

describe("${PORT}", () => {
  test("one port per model that uses it, in file order, from start_port", () => {
    const config = load(`
[server]
start_port = 30000
[models.b]
cmd = "server --port \${PORT}"
[models.20]
cmd = "server"
proxy = "http://127.0.0.1:\${PORT}/v1"
[models.fixed]
cmd = "server --port 8000"
proxy = "http://127.0.0.1:8000"
[models.envport]
cmd = "server"
proxy = "http://127.0.0.1:9"
env = { PORT = "\${PORT}" }
`);
    // "20" would sort first as a JS object key; allocation follows the file instead.
    expect(config.models.b?.port).toBe(30000);
    expect(config.models.b?.argv).toEqual(["server", "--port", "30000"]);
    expect(config.models["20"]?.port).toBe(30001);
    expect(config.models["20"]?.proxy).toBe("http://127.0.0.1:30001/v1");
    expect(config.models.fixed?.port).toBeNull();
    expect(config.models.envport?.port).toBe(30002);
    expect(config.models.envport?.env).toEqual({ PORT: "30002" });
  });

  test("the default proxy uses ${PORT}, so a model without it in cmd still gets a port", () => {
    const config = load(`[models.m]\ncmd = "server"\n`);
    expect(config.models.m?.port).toBe(10001);
    expect(config.models.m?.proxy).toBe("http://127.0.0.1:10001");
  });

  test("ports reported in use, and listen ports, are skipped", () => {
    const busy = new Set([10001, 10003]);
    const asked: number[] = [];
    const config = load(
      `
[server]
listen = ["127.0.0.1:10002"]
metrics_listen = "127.0.0.1:10005"
[models.a]
cmd = "a \${PORT}"
[models.b]
cmd = "b \${PORT}"
[models.c]
cmd = "c \${PORT}"
`,
      {
        isPortFree: (port) => {
          asked.push(port);
          return !busy.has(port);
        },
      },
    );
    expect([config.models.a?.port, config.models.b?.port, config.models.c?.port]).toEqual([
      10004, 10006, 10007,
    ]);
    expect(asked).toEqual([10001, 10003, 10004, 10006, 10007]);
  });

  test("running out of ports is an error at the model", () => {
    expect(
      errors(`[server]\nstart_port = 65535\n[models.a]\ncmd = "a"\n[models.b]\ncmd = "b"\n`),
    ).toEqual([
      "quartermaster.toml:5:1: models.b: no free port left for ${PORT} (server.start_port up to 65535)",
    ]);
  });
});

describe("built-in macros", () => {
  test("${MODEL_ID} and ${QM_BIN} (a command with spaces, split into argv)", () => {
    const config = load(
      `[models.fake]\ncmd = "\${QM_BIN} fake-upstream --name \${MODEL_ID} --port \${PORT}"\nuse_model_name = "\${MODEL_ID}-q4"\n`,
      { qmBin: "/opt/bun /src/cli/main.ts" },
    );
    expect(config.models.fake?.argv).toEqual([
      "/opt/bun",
      "/src/cli/main.ts",
      "fake-upstream",
      "--name",
      "fake",
      "--port",
      "10001",
    ]);
    expect(config.models.fake?.useModelName).toBe("fake-q4");
    expect(load(`[models.m]\ncmd = "\${QM_BIN}"\n`).models.m?.argv).toEqual(["qm"]);
  });

  test("${env.NAME} in every model string and in peers; missing variables are named", () => {
    const env = { HOST: "10.0.0.9", TOKEN: "t0k", DEV: "1" };
    const config = load(
      `
[models.m]
cmd = "server --api-key \${env.TOKEN}"
proxy = "http://\${env.HOST}:8000"
check_endpoint = "/\${env.TOKEN}/health"
cmd_stop = "stop \${env.TOKEN} \${PID}"
env = { CUDA_VISIBLE_DEVICES = "\${env.DEV}" }
use_model_name = "\${env.TOKEN}"
[peers.p]
url = "http://\${env.HOST}:8080"
api_key = "\${env.TOKEN}"
models = ["\${env.TOKEN}-model"]
`,
      { env },
    );
    const m = config.models.m!;
    expect([m.cmd, m.proxy, m.checkEndpoint, m.cmdStop, m.useModelName]).toEqual([
      "server --api-key t0k",
      "http://10.0.0.9:8000",
      "/t0k/health",
      "stop t0k ${PID}",
      "t0k",
    ]);
    expect(m.env).toEqual({ CUDA_VISIBLE_DEVICES: "1" });
    expect(m.port).toBeNull();
    expect(config.peers.p).toMatchObject({
      url: "http://10.0.0.9:8080",
      apiKey: "t0k",
      models: ["t0k-model"],
    });
    expect(errors(`[models.m]\ncmd = "x"\nenv = { A = "\${env.HF_TOKEN}" }\n`)).toEqual([
      "quartermaster.toml:3:9: models.m.env.A: environment variable HF_TOKEN is not set (used as ${env.HF_TOKEN})",
    ]);
  });

  test("${PID} only in cmd_stop; ${PORT} and ${MODEL_ID} not in peers", () => {
    expect(
      errors(
        `[models.m]\ncmd = "x \${PID}"\n[peers.p]\nurl = "http://h:\${PORT}"\napi_key = "\${MODEL_ID}"\n`,
      ),
    ).toEqual([
      "quartermaster.toml:2:1: models.m.cmd: ${PID} is only available in cmd_stop",
      "quartermaster.toml:4:1: peers.p.url: ${PORT} is only available in model settings",
      "quartermaster.toml:5:1: peers.p.api_key: ${MODEL_ID} is only available in model settings",
    ]);
  });

  test("only ${...} is special: $$, $PORT and text from env are left alone", () => {
    const config = load(`[models.m]\ncmd = "echo $$ $PORT \${env.X}"\nproxy = "http://h:1"\n`, {
      env: { X: "${PORT}" },
    });
    expect(config.models.m?.argv).toEqual(["echo", "$$", "$PORT", "${PORT}"]);
    expect(config.models.m?.port).toBeNull();
  });
});

describe("user macros", () => {
  test("expand anywhere in a model, may nest, use env and deferred macros", () => {
    const config = load(
      `
[macros]
models_dir = "\${root}/models"
root = "\${env.HOME_DIR}"
llama = "llama-server --port \${PORT} --alias \${MODEL_ID}"
ctx = 8192
[models.qwen]
cmd = "\${llama} -m \${models_dir}/qwen.gguf -c \${ctx}"
`,
      { env: { HOME_DIR: "/srv" } },
    );
    expect(config.models.qwen?.argv).toEqual([
      "llama-server",
      "--port",
      "10001",
      "--alias",
      "qwen",
      "-m",
      "/srv/models/qwen.gguf",
      "-c",
      "8192",
    ]);
    expect(config.macros).toEqual({
      models_dir: "/srv/models",
      root: "/srv",
      llama: "llama-server --port ${PORT} --alias ${MODEL_ID}",
      ctx: "8192",
    });
  });

  test("a cycle is reported once, at the macro, and not again where it is used", () => {
    const text = `[macros]
a = "x \${b}"
b = "\${a}"
self = "\${self}"
[models.m]
cmd = "\${a}"
`;
    expect(errors(text)).toEqual([
      "quartermaster.toml:2:1: macros.a: macro cycle: a -> b -> a",
      "quartermaster.toml:4:1: macros.self: macro cycle: self -> self",
    ]);
  });

  test("unknown macros are named, with a suggestion", () => {
    const text = `[macros]
models_dir = "/m"
bad = "\${env.NOPE}"
[models.m]
cmd = "x \${modles_dir} \${bad}"
cmd_stop = "\${nothing_like_it}"
proxy = "http://h:\${PORT"
`;
    expect(errors(text)).toEqual([
      "quartermaster.toml:3:1: macros.bad: environment variable NOPE is not set (used as ${env.NOPE})",
      "quartermaster.toml:5:1: models.m.cmd: unknown macro ${modles_dir} (did you mean ${models_dir}?)",
      "quartermaster.toml:6:1: models.m.cmd_stop: unknown macro ${nothing_like_it}",
      'quartermaster.toml:7:1: models.m.proxy: unterminated "${" in "http://h:${PORT"',
    ]);
  });

  test("a macro that uses ${PID} may only reach cmd_stop; reserved names are refused", () => {
    const text = `[macros]
stop = "kill \${PID}"
PORT = "1"
[models.m]
cmd = "\${stop}"
cmd_stop = "\${stop}"
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:3:1: macros.PORT: "PORT" cannot be a macro name (reserved or not a bare key)',
      "quartermaster.toml:5:1: models.m.cmd: ${PID} is only available in cmd_stop (used by macro stop)",
    ]);
  });
});
