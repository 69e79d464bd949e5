/**
 * llama-server's slot API (`--slots`), one slot, for qm's `keep_kv` end to end: `GET /slots`
 * reports the slot's cached prompt size (`n_prompt_tokens`, present once a prompt was
 * processed, as llama-server does), `POST /slots/0?action=save|restore` with
 * `{"filename": NAME}` writes the cached prompt to (reads it from) `--slot-save-path` + NAME,
 * so a restarted demo can restore it. A chat request's usage reports the prompt's prefix
 * found in the slot as `prompt_tokens_details.cached_tokens`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { DemoOptions } from "./flags.ts";
import { json, openAiError, readJsonObject } from "./http.ts";
import { renderPrompt, tokenCount } from "./llama-extras.ts";

export class DemoSlots {
  /** The prompt the slot holds ("" = none yet). */
  private prompt = "";
  private used = false;

  constructor(private readonly options: DemoOptions) {}

  /** Tokens of `body`'s prompt already in the slot; the slot then holds this prompt. */
  take(body: Record<string, unknown>): number {
    const next = renderPrompt(body.messages, body.tools);
    let n = 0;
    while (n < next.length && n < this.prompt.length && next[n] === this.prompt[n]) n++;
    this.prompt = next;
    this.used = true;
    return Math.floor(n / 4);
  }

  list(): Response {
    const slot: Record<string, unknown> = {
      id: 0,
      n_ctx: this.options.ctxSize ?? 4096,
      speculative: false,
      is_processing: false,
    };
    if (this.used) {
      slot.id_task = 1;
      slot.n_prompt_tokens = tokenCount(this.prompt);
    }
    return json([slot]);
  }

  async action(req: Request, id: string, action: string): Promise<Response> {
    const dir = this.options.slotSavePath;
    if (!dir) {
      return openAiError(
        501,
        "This server does not support slots action. Start it with `--slot-save-path`",
        "not_supported_error",
      );
    }
    if (id !== "0") return openAiError(400, "Invalid slot ID");
    const parsed = await readJsonObject(req);
    if (typeof parsed === "string") return openAiError(400, parsed);
    const filename = parsed[0].filename;
    if (typeof filename !== "string" || !/^[\w.-]+$/.test(filename) || filename.startsWith(".")) {
      return openAiError(400, "Invalid filename");
    }
    const path = dir + filename;
    const t0 = performance.now();
    if (action === "save") {
      const text = JSON.stringify({ prompt: this.prompt });
      writeFileSync(path, text);
      return json({
        id_slot: 0,
        filename,
        n_saved: tokenCount(this.prompt),
        n_written: text.length,
        timings: { save_ms: performance.now() - t0 },
      });
    }
    if (action === "restore") {
      let text: string;
      let prompt: unknown;
      try {
        text = readFileSync(path, "utf8");
        prompt = (JSON.parse(text) as { prompt?: unknown }).prompt;
      } catch {
        return openAiError(400, "Unable to restore slot: invalid slot save file");
      }
      if (typeof prompt !== "string") {
        return openAiError(400, "Unable to restore slot: invalid slot save file");
      }
      this.prompt = prompt;
      this.used = true;
      return json({
        id_slot: 0,
        filename,
        n_restored: tokenCount(prompt),
        n_read: text.length,
        timings: { restore_ms: performance.now() - t0 },
      });
    }
    return openAiError(400, "Invalid action");
  }
}
