/**
 * llama-server's helper routes, enough for qm's Anthropic `count_tokens` and `max_tokens`
 * clamping to be tested end to end: `POST /apply-template` renders chat messages into a prompt
 * (here a ChatML-like text), `POST /tokenize` cuts text into tokens (here one per 4
 * characters, the same stand-in the completions' usage uses), and `GET /props` reports the
 * context size (`default_generation_settings.n_ctx`) when `--ctx-size` gives one.
 */
import type { DemoOptions } from "./flags.ts";
import { json, openAiError, readJsonObject } from "./http.ts";

type Rec = Record<string, unknown>;

function partText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: Rec) => (p?.type === "text" ? String(p.text ?? "") : "<image>"))
    .join("\n");
}

/** The prompt a chat template would make of these messages and tools. */
export function renderPrompt(messages: unknown, tools: unknown): string {
  let out = "";
  if (Array.isArray(tools) && tools.length > 0) {
    out += `<|im_start|>system\n# Tools\n${JSON.stringify(tools)}<|im_end|>\n`;
  }
  for (const m of Array.isArray(messages) ? (messages as Rec[]) : []) {
    let body = partText(m.content);
    if (typeof m.reasoning_content === "string")
      body = `<think>${m.reasoning_content}</think>${body}`;
    if (Array.isArray(m.tool_calls)) body += JSON.stringify(m.tool_calls);
    out += `<|im_start|>${String(m.role)}\n${body}<|im_end|>\n`;
  }
  return `${out}<|im_start|>assistant\n`;
}

export const tokenCount = (text: string): number => Math.ceil(text.length / 4);

export async function applyTemplate(req: Request): Promise<Response> {
  const parsed = await readJsonObject(req);
  if (typeof parsed === "string") return openAiError(400, parsed);
  const [body] = parsed;
  if (!Array.isArray(body.messages)) return openAiError(400, "'messages' must be an array");
  return json({ prompt: renderPrompt(body.messages, body.tools) });
}

export async function tokenize(req: Request): Promise<Response> {
  const parsed = await readJsonObject(req);
  if (typeof parsed === "string") return openAiError(400, parsed);
  const content = parsed[0].content;
  if (typeof content !== "string") return openAiError(400, "'content' must be a string");
  return json({ tokens: Array.from({ length: tokenCount(content) }, (_, i) => 1000 + i) });
}

export function props(options: DemoOptions): Response {
  if (!options.ctxSize) return openAiError(404, "no route GET /props (start with --ctx-size)");
  return json({
    default_generation_settings: { n_ctx: options.ctxSize },
    total_slots: 1,
    model_alias: options.name,
    model_path: options.modelPath ?? null,
    // As llama-server describes its model: what its template renders (tools with
    // --tool-calls, thinking with --reasoning) and what it takes in besides text (nothing).
    chat_template: demoTemplate(options),
    modalities: { vision: false, audio: false },
  });
}

/** A ChatML-like template that mentions what the demo does, as real templates do. */
function demoTemplate(options: DemoOptions): string {
  const tools = options.toolCalls ? "{%- if tools %}# Tools\n{{ tools | tojson }}{%- endif %}" : "";
  const think = options.reasoningTokens ? "{{- '<think>' }}" : "";
  return `${tools}{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}<|im_start|>assistant\n${think}`;
}

/**
 * With `--ctx-size`, a chat request whose prompt (as `/apply-template` + `/tokenize` count it)
 * plus `max_tokens` does not fit answers 400 as vLLM does; a prompt that alone overflows gets
 * llama-server's `exceed_context_size_error`.
 */
export function contextOverflow(options: DemoOptions, body: Rec): Response | null {
  const ctx = options.ctxSize;
  if (!ctx) return null;
  const prompt = tokenCount(renderPrompt(body.messages, body.tools));
  if (prompt >= ctx) {
    return json(
      {
        error: {
          code: 400,
          message: "the request exceeds the available context size, try increasing it",
          type: "exceed_context_size_error",
          n_prompt_tokens: prompt,
          n_ctx: ctx,
        },
      },
      400,
    );
  }
  const max = typeof body.max_tokens === "number" ? body.max_tokens : 0;
  if (prompt + max > ctx) {
    return openAiError(
      400,
      `This model's maximum context length is ${ctx} tokens. However, you requested ${prompt + max} tokens (${prompt} in the messages, ${max} in the completion).`,
    );
  }
  return null;
}
