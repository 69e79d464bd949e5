// biome-ignore-all lint/suspicious/noTemplateCurlyInString: qm macros are written ${NAME}; these strings are TOML and expected values, not JS templates.
/** `server.preload` / `preload = true`, `resources.gpus` / a model's `gpus`, and `${GPU_IDS}`. */
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../src/config/errors.ts";
import { config } from "../support/config.ts";

function issues(toml: string): string[] {
  try {
    config(toml);
  } catch (err) {
    if (err instanceof ConfigError) return err.message.split("\n");
    throw err;
  }
  throw new Error("expected a ConfigError");
}

const m = (id: string, ...keys: string[]) =>
  [`[models.${id}]`, `cmd = "x"`, ...keys, ""].join("\n");

describe("preload", () => {
  test("the server list first, then preload = true in file order, each once", () => {
    const c = config(
      `[server]\npreload = ["c", "a", "c"]\n${m("b", "preload = true")}${m("a", "preload = true")}${m("c")}`,
    );
    expect(c.server.preload).toEqual(["c", "a", "b"]);
  });

  test("none: no preload in the config (as before)", () => {
    expect(config(m("a")).server.preload).toBeUndefined();
  });

  test("an unknown name is an error at its line and column, with a suggestion", () => {
    expect(issues(`[server]\npreload = ["a", "qwen-8b"]\n${m("qwen-7b")}${m("a")}`)).toEqual([
      'test.toml:2:17: server.preload[1]: unknown model "qwen-8b" (did you mean "qwen-7b"?)',
    ]);
  });
});

describe("several GPUs", () => {
  const cards = `[resources]\ngpus = [{index = 1, vram_budget_gb = 24}, {index = 0, vram_budget_gb = 16}]\n`;

  test("cards by index; a model's count or fixed list (sorted, once each) is kept", () => {
    const c = config(`${cards}${m("a", "gpus = 2")}${m("b", "gpus = [1, 0, 1]")}${m("c")}`);
    expect(c.resources.gpus).toEqual([
      { index: 0, vramBudgetGb: 16 },
      { index: 1, vramBudgetGb: 24 },
    ]);
    expect(c.models.a!.gpus).toBe(2);
    expect(c.models.b!.gpus).toEqual([0, 1]);
    expect(c.models.c!.gpus).toBeUndefined();
    expect(config(m("a")).resources.gpus).toBeUndefined();
  });

  test("a card listed twice, a count beyond the cards, a card not listed, an empty list", () => {
    const lines = issues(
      `[resources]\ngpus = [{index = 0, vram_budget_gb = 8}, {index = 0, vram_budget_gb = 8}, {index = 1, vram_budget_gb = 8}]\n` +
        `${m("a", "gpus = 3")}${m("b", "gpus = [0, 4]")}${m("c", "gpus = []")}`,
    );
    expect(lines).toEqual([
      "test.toml:2:43: resources.gpus[1].index: GPU 0 is listed twice",
      "test.toml:5:1: models.a.gpus: needs 3 GPUs but resources.gpus lists 2",
      "test.toml:8:12: models.b.gpus[1]: GPU 4 is not in resources.gpus (0, 1)",
      "test.toml:11:1: models.c.gpus: must list at least one GPU (or give a count)",
    ]);
  });

  test("${GPU_IDS} stays in cmd and env until a start fills it", () => {
    const c = config(
      m("a", 'env = { TP = "${GPU_IDS}" }').replace(
        'cmd = "x"',
        'cmd = "vllm --tp-cards ${GPU_IDS}"',
      ),
    );
    expect(c.models.a!.argv).toEqual(["vllm", "--tp-cards", "${GPU_IDS}"]);
    expect(c.models.a!.env).toEqual({ TP: "${GPU_IDS}" });
  });
});
