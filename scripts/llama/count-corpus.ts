/**
 * Counts the prompt tokens of every request in `corpus.ts` the way qm does for a running
 * llama-server (translatePrompt → countPromptTokens: /apply-template + /tokenize), on each tiny
 * model family, and writes tests/api/anthropic/fixtures/token-counts.json, which
 * tests/api/anthropic/estimate.test.ts checks `estimatePrompt` against.
 *
 *   bun scripts/llama/count-corpus.ts        (needs build.sh and tiny-gguf.py run first)
 *   bun scripts/llama/count-corpus.ts --out /tmp/held-out.json gemma4 phi3
 *
 * A llama-server without a vision projector refuses image parts, and with one it counts only
 * the image's placeholder: so an entry with images records the count of its prompt with the
 * image parts left out, and `images` says how many were left out. A family whose template
 * refuses an entry (Llama 3.1 takes one tool call a turn) records no count for it.
 */
import { join } from "node:path";
import { estimatePrompt, IMAGE_TOKENS } from "../../src/api/anthropic/translate/estimate.ts";
import { type Prompt, translatePrompt } from "../../src/api/anthropic/translate/request.ts";
import { countPromptTokens } from "../../src/api/anthropic/upstream.ts";
import type { OaiMessage } from "../../src/api/chat/wire.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { corpus } from "./corpus.ts";
import { startLlama } from "./server.ts";

/** `[--out FILE] [FAMILY…]`: by default every family of tiny-gguf.py. */
const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const FIXTURE = join(import.meta.dir, "..", "..", "tests", "api", "anthropic", "fixtures");
const OUT = outAt >= 0 ? (args.splice(outAt, 2)[1] ?? "") : join(FIXTURE, "token-counts.json");
const FAMILIES = args.length > 0 ? args : ["llama3", "qwen3", "gemma4", "phi3"];

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
for (const r of records) {
  const estimate = estimatePrompt(translatePrompt(r.request, "llamacpp"));
  const text = estimate - (r.images ?? 0) * IMAGE_TOKENS;
  console.log(r.name.padEnd(28), `estimate ${text}`.padEnd(15), JSON.stringify(r.exact));
}
