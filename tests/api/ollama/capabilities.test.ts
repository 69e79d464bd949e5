/**
 * `/api/show` `capabilities` (src/api/ollama/capabilities.ts): the config's list, else the
 * running server's `/props` (once per process), else the GGUF file, else the command; an
 * embedding model never claims completion. And what `/api/show` (and tags, ps) never shows:
 * anything of the command or the env.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Capabilities,
  capabilityList,
  fromCommand,
  fromGguf,
  fromProps,
  PROPS_DEADLINE_MS,
} from "../../../src/api/ollama/capabilities.ts";
import { readGgufFile } from "../../../src/gpu/gguf/index.ts";
import { val, writeModelFile } from "../../gpu/gguf/gguf-writer.ts";
import { FakeFetch, useFakeFetch } from "../../support/fake-fetch.ts";
import { fakeGateway } from "../../support/fake-gateway.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { appOf, bodyOf, call, post } from "../../support/in-process.ts";

const up = useFakeFetch();
const dir = await mkdtemp(join(tmpdir(), "qm-caps-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

const QWEN3_TEMPLATE =
  "{%- if tools %}<|im_start|>system\n# Tools{%- endif %}{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>{%- endif %}";
const LLAMA31_TEMPLATE = "{%- if tools is not none %}Environment: ipython{%- endif %}";
const PHI35_TEMPLATE = "{% for message in messages %}<|{{ message['role'] }}|>{% endfor %}";

describe("what each source says", () => {
  test("chat templates: tools and thinking", () => {
    expect(fromProps({ chat_template: QWEN3_TEMPLATE })).toEqual({ tools: true, thinking: true });
    expect(fromProps({ chat_template: LLAMA31_TEMPLATE })).toEqual({
      tools: true,
      thinking: false,
    });
    expect(fromProps({ chat_template: PHI35_TEMPLATE })).toEqual({ tools: false, thinking: false });
  });

  test("/props: llama.cpp's template caps win over the text; modalities say vision", () => {
    expect(
      fromProps({
        chat_template: PHI35_TEMPLATE,
        chat_template_caps: { supports_tools: false, supports_tool_calls: true },
        modalities: { vision: true, audio: false },
      }),
    ).toEqual({ tools: true, thinking: false, vision: true });
    expect(fromProps({ chat_template_caps: { supports_tools: false } })).toEqual({ tools: false });
    expect(fromProps({ default_generation_settings: { n_ctx: 4096 } })).toEqual({});
  });

  test("GGUF metadata: embedding architectures and pooling, chat templates", () => {
    const meta = (kv: [string, unknown][]) => new Map(kv as [string, string][]);
    expect(fromGguf(meta([["general.architecture", "bert"]]))).toEqual({ embedding: true });
    expect(
      fromGguf(
        meta([
          ["general.architecture", "qwen3"],
          ["qwen3.pooling_type", 3],
        ]),
      ),
    ).toEqual({ embedding: true });
    expect(
      fromGguf(
        meta([
          ["general.architecture", "qwen3"],
          ["qwen3.pooling_type", 0],
          ["tokenizer.chat_template", QWEN3_TEMPLATE],
        ]),
      ),
    ).toEqual({ tools: true, thinking: true });
  });

  test("commands: llama-server and vLLM flags", () => {
    const argv = (s: string) => s.split(" ");
    expect(fromCommand(argv("llama-server -m x.gguf --embedding"))).toEqual({
      tools: true,
      embedding: true,
    });
    expect(fromCommand(argv("llama-server -m x.gguf --mmproj p.gguf --no-jinja"))).toEqual({
      tools: false,
      vision: true,
    });
    expect(fromCommand(argv("vllm serve m --task embed"))).toEqual({
      tools: false,
      embedding: true,
    });
    expect(
      fromCommand(argv("vllm serve m --enable-auto-tool-choice --reasoning-parser qwen3")),
    ).toEqual({ tools: true, thinking: true });
    expect(fromCommand(argv("my-server --port 1"))).toEqual({});
  });

  test("the list: an embedding model embeds only; the command's flags hold; tools unless known absent", () => {
    expect(capabilityList(null, {})).toEqual(["completion", "tools"]);
    expect(capabilityList({ tools: false }, {})).toEqual(["completion"]);
    expect(capabilityList({ tools: true, thinking: true }, { embedding: true })).toEqual([
      "embedding",
    ]);
    expect(capabilityList({ vision: false }, { vision: true, tools: true })).toEqual([
      "completion",
      "tools",
      "vision",
    ]);
  });
});

const TOML = (dirPath: string) => `
[models.chat]
cmd = "llama-server -m ${dirPath}/Qwen3-8B-Q4_K_M.gguf --port \${PORT}"
proxy = "${up.url}"
check_endpoint = "none"

[models.embed]
cmd = "llama-server -m ${dirPath}/nomic-embed.gguf --port \${PORT}"
proxy = "${up.url}"
check_endpoint = "none"

[models.told]
cmd = "llama-server -m /nowhere/x.gguf --port \${PORT}"
proxy = "${up.url}"
check_endpoint = "none"
capabilities = ["completion", "vision"]

[models.other]
cmd = "my-server --port \${PORT}"
proxy = "${up.url}"
check_endpoint = "none"
`;

await writeModelFile(join(dir, "Qwen3-8B-Q4_K_M.gguf"), {
  kv: [
    ["general.architecture", val.str("qwen3")],
    ["tokenizer.chat_template", val.str(LLAMA31_TEMPLATE)],
  ],
});
await writeModelFile(join(dir, "nomic-embed.gguf"), {
  kv: [
    ["general.architecture", val.str("nomic-bert")],
    ["nomic-bert.pooling_type", val.u32(1)],
  ],
});

const shown = async (app: ReturnType<typeof appOf>, model: string) =>
  (await bodyOf(await post(app, "/api/show", { model }))).capabilities;

describe("/api/show capabilities", () => {
  test("the config's list is the answer, and nobody is asked", async () => {
    const gw = fakeGateway(TOML(dir));
    gw.states.told = "ready";
    expect(await shown(appOf(gw), "told")).toEqual(["completion", "vision"]);
    expect(up.sent).toHaveLength(0);
  });

  test("a running server's /props, asked once per process; a restart is asked again", async () => {
    const gw = fakeGateway(TOML(dir));
    const app = appOf(gw);
    gw.states.chat = "ready";
    gw.pids.chat = 100;
    up.answer = () =>
      Response.json({ chat_template: QWEN3_TEMPLATE, modalities: { vision: false } });
    expect(await shown(app, "chat")).toEqual(["completion", "tools", "thinking"]);
    expect(await shown(app, "chat")).toEqual(["completion", "tools", "thinking"]);
    expect(up.calls("/props")).toHaveLength(1);
    gw.pids.chat = 101;
    up.answer = () => Response.json({ chat_template: PHI35_TEMPLATE });
    expect(await shown(app, "chat")).toEqual(["completion"]);
    expect(up.calls("/props")).toHaveLength(2);
  });

  test("without a running server (or one without /props), the GGUF file says", async () => {
    const gw = fakeGateway(TOML(dir));
    const app = appOf(gw);
    // Stopped: nothing is asked; the file's template (Llama 3.1: tools, no thinking).
    expect(await shown(app, "chat")).toEqual(["completion", "tools"]);
    expect(await shown(app, "embed")).toEqual(["embedding"]);
    expect(up.sent).toHaveLength(0);
    // Running, but /props is not there: the file, and /props is asked again next time.
    gw.states.embed = "ready";
    up.answer = () => new Response("not found", { status: 404 });
    expect(await shown(app, "embed")).toEqual(["embedding"]);
    expect(await shown(app, "embed")).toEqual(["embedding"]);
    expect(up.calls("/props")).toHaveLength(2);
  });

  test("no server, no file: the command's default", async () => {
    const gw = fakeGateway(TOML(dir));
    expect(await shown(appOf(gw), "other")).toEqual(["completion", "tools"]);
  });

  test("/props that hangs is given up at its deadline; one too big is not read", async () => {
    const timers = new FakeTimers();
    const fake = new FakeFetch("http://hang.test");
    let asked!: () => void;
    const reached = new Promise<void>((r) => {
      asked = r;
    });
    fake.answer = () => {
      asked();
      return new Promise<Response>(() => {});
    };
    const caps = new Capabilities({ fetch: fake.fetch, timers, readGguf: readGgufFile });
    const gw = fakeGateway(TOML(dir).replaceAll(up.url, "http://hang.test"));
    const pending = caps.of(gw.config.models.chat!, 7);
    await reached;
    timers.advance(PROPS_DEADLINE_MS);
    // Given up: the file answers.
    expect(await pending).toEqual(["completion", "tools"]);
    expect(timers.pending).toBe(0);

    const big = new FakeFetch("http://big.test");
    big.answer = () =>
      new Response(JSON.stringify({ chat_template: "x".repeat(5 * 1024 * 1024) }), {
        headers: { "content-type": "application/json" },
      });
    const caps2 = new Capabilities({ fetch: big.fetch });
    const gw2 = fakeGateway(TOML(dir).replaceAll(up.url, "http://big.test"));
    expect(await caps2.of(gw2.config.models.other!, 1)).toEqual(["completion", "tools"]);
  });
});

describe("/api/show shows nothing of the command or the env", () => {
  const SECRET_TOML = `
[models.keyed]
cmd = "llama-server -m /models/Llama-3.1-8B-Q4_K_M.gguf --port \${PORT} --api-key sekrit123 --hf-token hf_topsecret"
proxy = "${up.url}"
check_endpoint = "none"
env = { OPENAI_API_KEY = "env-sekrit-456", CUDA_VISIBLE_DEVICES = "0" }
est_vram_gb = 5
`;

  test("show, tags and ps carry neither the key, the token, the env nor the command", async () => {
    const gw = fakeGateway(SECRET_TOML);
    const app = appOf(gw);
    gw.states.keyed = "ready";
    gw.pids.keyed = 42;
    up.answer = () => Response.json({ chat_template: LLAMA31_TEMPLATE });
    const show = await bodyOf(await post(app, "/api/show", { model: "keyed" }));
    const tags = await bodyOf(await call(app, "GET", "/api/tags"));
    const ps = await bodyOf(await call(app, "GET", "/api/ps"));
    for (const body of [show, tags, ps]) {
      const text = JSON.stringify(body);
      for (const secret of [
        "sekrit123",
        "hf_topsecret",
        "env-sekrit-456",
        "--api-key",
        "--port",
        "llama-server",
        "CUDA_VISIBLE_DEVICES",
        "/models/",
      ]) {
        expect({ secret, shown: text.includes(secret) }).toEqual({ secret, shown: false });
      }
    }
    // What is shown is read from the id and the model file's name only.
    expect(show.details).toMatchObject({
      format: "gguf",
      family: "keyed",
      parameter_size: "8B",
      quantization_level: "Q4_K_M",
    });
    expect(show.modelfile).toBe(
      '# served by quartermaster\n# model "keyed", configured in qm\'s config\n',
    );
    expect(show.parameters).toBe("");
    expect(show.template).toBe("");
  });

  test("a number in a secret never passes for the parameter size", async () => {
    const gw = fakeGateway(`
[models.plain]
cmd = "my-server --port \${PORT} --api-key 70b"
check_endpoint = "none"
`);
    const show = await bodyOf(await post(appOf(gw), "/api/show", { model: "plain" }));
    expect(show.details.parameter_size).toBe("");
  });
});
