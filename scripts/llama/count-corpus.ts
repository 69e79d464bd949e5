/**
 * Counts the prompt tokens of every request in `corpus.ts` the way qm does for a running
 * llama-server (translatePrompt → countPromptTokens: /apply-template + /tokenize), on each tiny
 * model family, and writes tests/anthropic/fixtures/token-counts.json, which
 * tests/anthropic/estimate.test.ts checks `estimatePrompt` against.
 *
 *   bun scripts/llama/count-corpus.ts        (needs build.sh and tiny-gguf.py run first)
 *
 * A llama-server without a vision projector refuses image parts, and with one it counts only
 * the image's placeholder: so an entry with images records the count of its prompt with the
 * image parts left out, and `images` says how many were left out. A family whose template
 * refuses an entry (Llama 3.1 takes one tool call a turn) records no count for it.
 */
import { join } from "node:path";
import type { OaiMessage } from "../../src/api/anthropic/translate/openai-types.ts";
import { type Prompt, translatePrompt } from "../../src/api/anthropic/translate/request.ts";
import { countPromptTokens } from "../../src/api/anthropic/upstream.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { corpus } from "./corpus.ts";
import { startLlama } from "./server.ts";

const FAMILIES = ["llama3", "qwen3"] as const;
const OUT = join(
  import.meta.dir,
  "..",
  "..",
  "tests",
  "anthropic",
  "fixtures",
  "token-counts.json",
);

function withoutImages(prompt: Prompt): { prompt: Prompt; images: number } {
  let images = 0;
  const messages = prompt.messages.map((m): OaiMessage => {
    if (!Array.isArray(m.content)) return m;
    const parts = m.content.filter((p) => p.type === "text");
    images += m.content.length - parts.length;
    return { ...m, content: parts.map((p) => p.text).join("\n") };
  });
  return { prompt: { ...prompt, messages }, images };
}

const exact: Record<string, Record<string, number>> = {};
const images: Record<string, number> = {};
for (const family of FAMILIES) {
  const server = await startLlama(family);
  try {
    const model = {
      id: `tiny-${family}`,
      cmd: server.argv.join(" "),
      argv: server.argv,
      proxy: server.base,
      useModelName: "",
    } as ModelConfig;
    for (const { name, request } of corpus) {
      const stripped = withoutImages(translatePrompt(request, "llamacpp"));
      const n = await countPromptTokens(
        model,
        "llamacpp",
        stripped.prompt,
        AbortSignal.timeout(30_000),
      );
      // A template may refuse a shape (Llama 3.1: one tool call a turn): no count for it there.
      if (n === null) console.error(`${family}/${name}: llama-server could not count it`);
      else exact[name] = { ...exact[name], [family]: n };
      if (stripped.images > 0) images[name] = stripped.images;
    }
  } finally {
    await server.stop();
  }
}

const uncounted = corpus.filter(({ name }) => !exact[name]).map(({ name }) => name);
if (uncounted.length > 0) throw new Error(`no family could count ${uncounted.join(", ")}`);
const records = corpus.map(({ name, request }) => ({
  name,
  request,
  exact: exact[name],
  ...(images[name] ? { images: images[name] } : {}),
}));
await Bun.write(OUT, `${JSON.stringify({ counted_on: FAMILIES, records }, null, 2)}\n`);
console.log(`wrote ${records.length} records to ${OUT}`);
for (const r of records) console.log(r.name.padEnd(28), JSON.stringify(r.exact));
