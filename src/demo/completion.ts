/**
 * What the demo upstream "generates": a deterministic, friendly sentence cut into word
 * tokens, and the OpenAI wire frames around them. Token text is JSON-escaped once at
 * startup so the hot path only concatenates strings (the benchmark's upstream).
 *
 * Shapes follow the OpenAI API reference for chat completions, the chat completion chunk
 * object (streaming) and legacy completions.
 */

export interface TokenTable {
  /** Plain token text, e.g. "Hello!", " I", " am". */
  text: string[];
  /** `JSON.stringify` of each token, precomputed. */
  json: string[];
}

export function buildTokens(name: string, count: number, markdown = false): TokenTable {
  if (markdown) return markdownTokens(name, count);
  return wordTokens(`Hello! I am ${name}, a demo model served by quartermaster.`, count);
}

/** `sentence` cut into word tokens (each but the first with its leading space), repeated to `count`. */
export function wordTokens(sentence: string, count = sentence.split(" ").length): TokenTable {
  const words = sentence.split(" ");
  const text: string[] = [];
  for (let i = 0; i < count; i++) {
    const word = words[i % words.length] as string;
    text.push(i === 0 ? word : ` ${word}`);
  }
  return { text, json: text.map((t) => JSON.stringify(t)) };
}

/**
 * `--markdown`: a small Markdown document (heading, emphasis, a list, a fenced code block), cut
 * into tokens that each carry the whitespace before a word, line breaks included; repeated
 * when more tokens are asked for.
 */
function markdownTokens(name: string, count: number): TokenTable {
  const doc =
    `## ${name}\n\nA **demo** answer, served by *quartermaster*:\n\n` +
    '- first point\n- second point\n\n```js\nconsole.log("hi");\n```\n\n';
  const pieces = doc.match(/\s*\S+/g) ?? [];
  const text: string[] = [];
  for (let i = 0; i < count; i++) {
    const piece = pieces[i % pieces.length] as string;
    // A repeat starts a new block, as the document did.
    text.push(i > 0 && i % pieces.length === 0 ? `\n\n${piece}` : piece);
  }
  return { text, json: text.map((t) => JSON.stringify(t)) };
}

/** What `--reasoning N` "thinks" before answering, cut into word tokens like the answer. */
export function buildReasoning(count: number): TokenTable {
  return wordTokens("Let me think about this request step by step before I answer.", count);
}

/** The tool call a `--tool-calls` completion ends with (src/demo/tools.ts picks it). */
export interface DemoToolCall {
  id: string;
  name: string;
  arguments: string;
  /** `arguments` cut into small pieces, streamed as OpenAI does (one fragment per chunk). */
  pieces: string[];
}

export function buildToolCall(
  name: string,
  id: string,
  input: Record<string, unknown>,
): DemoToolCall {
  const args = JSON.stringify(input);
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += 7) pieces.push(args.slice(i, i + 7));
  return { id, name, arguments: args, pieces };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

/** `cached` (`--cached-tokens`) adds OpenAI's `prompt_tokens_details.cached_tokens`. */
export function usage(prompt: number, completion: number, cached?: number): Usage {
  const u: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  if (cached !== undefined) u.prompt_tokens_details = { cached_tokens: Math.min(cached, prompt) };
  return u;
}

/**
 * One streamed response, as frames: `lead` (e.g. the role chunk), one frame per token
 * (the unit `--token-ms` paces and `--crash-after-tokens` counts), then `tail` (final chunk
 * with `finish_reason`, optional usage chunk, `data: [DONE]`).
 */
export interface StreamPlan {
  lead: string[];
  tokens: string[];
  tail: string[];
}

export interface ChatStreamInput {
  id: string;
  created: number;
  model: string;
  table: TokenTable;
  count: number;
  finishReason: "stop" | "length" | "tool_calls";
  toolCall: DemoToolCall | null;
  usage: Usage | null;
  /** `--reasoning`: streamed as `reasoning_content` before the answer (llama.cpp's field). */
  reasoning?: TokenTable;
}

const DONE = "data: [DONE]\n\n";

export function chatStreamPlan(p: ChatStreamInput): StreamPlan {
  const head = `data: {"id":${JSON.stringify(p.id)},"object":"chat.completion.chunk","created":${p.created},"model":${JSON.stringify(p.model)},"system_fingerprint":"qm-demo","choices":[{"index":0,"delta":`;
  const open = `,"logprobs":null,"finish_reason":null}]}\n\n`;
  const tokens: string[] = [];
  for (const r of p.reasoning?.json ?? []) tokens.push(`${head}{"reasoning_content":${r}}${open}`);
  for (let i = 0; i < p.count; i++) tokens.push(`${head}{"content":${p.table.json[i]}}${open}`);
  const call = p.toolCall;
  if (call !== null) {
    // OpenAI sends id, type and name once, then `arguments` in fragments by index.
    tokens.push(
      `${head}{"tool_calls":[{"index":0,"id":${JSON.stringify(call.id)},"type":"function","function":{"name":${JSON.stringify(call.name)},"arguments":""}}]}${open}`,
    );
    for (const piece of call.pieces) {
      tokens.push(
        `${head}{"tool_calls":[{"index":0,"function":{"arguments":${JSON.stringify(piece)}}}]}${open}`,
      );
    }
  }
  const tail = [`${head}{},"logprobs":null,"finish_reason":"${p.finishReason}"}]}\n\n`];
  if (p.usage !== null) {
    // With stream_options.include_usage the last chunk before [DONE] has empty choices.
    tail.push(
      `data: {"id":${JSON.stringify(p.id)},"object":"chat.completion.chunk","created":${p.created},"model":${JSON.stringify(p.model)},"system_fingerprint":"qm-demo","choices":[],"usage":${JSON.stringify(p.usage)}}\n\n`,
    );
  }
  tail.push(DONE);
  return { lead: [`${head}{"role":"assistant","content":""}${open}`], tokens, tail };
}

export function chatResponse(p: ChatStreamInput): string {
  const call = p.toolCall;
  const message = {
    role: "assistant",
    content: p.count > 0 || call === null ? p.table.text.slice(0, p.count).join("") : null,
    refusal: null,
    ...(p.reasoning ? { reasoning_content: p.reasoning.text.join("") } : {}),
    ...(call === null
      ? {}
      : {
          tool_calls: [
            {
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: call.arguments },
            },
          ],
        }),
  };
  return JSON.stringify({
    id: p.id,
    object: "chat.completion",
    created: p.created,
    model: p.model,
    system_fingerprint: "qm-demo",
    choices: [{ index: 0, message, logprobs: null, finish_reason: p.finishReason }],
    usage: p.usage,
  });
}

export interface TextStreamInput {
  id: string;
  created: number;
  model: string;
  table: TokenTable;
  count: number;
  finishReason: "stop" | "length";
  usage: Usage | null;
}

export function textStreamPlan(p: TextStreamInput): StreamPlan {
  const head = `data: {"id":${JSON.stringify(p.id)},"object":"text_completion","created":${p.created},"model":${JSON.stringify(p.model)},"choices":[{"index":0,"text":`;
  const tokens: string[] = [];
  for (let i = 0; i < p.count; i++) {
    tokens.push(`${head}${p.table.json[i]},"logprobs":null,"finish_reason":null}]}\n\n`);
  }
  const tail = [`${head}"","logprobs":null,"finish_reason":"${p.finishReason}"}]}\n\n`];
  if (p.usage !== null) {
    tail.push(
      `data: {"id":${JSON.stringify(p.id)},"object":"text_completion","created":${p.created},"model":${JSON.stringify(p.model)},"choices":[],"usage":${JSON.stringify(p.usage)}}\n\n`,
    );
  }
  tail.push(DONE);
  return { lead: [], tokens, tail };
}

export function textResponse(p: TextStreamInput): string {
  return JSON.stringify({
    id: p.id,
    object: "text_completion",
    created: p.created,
    model: p.model,
    choices: [
      {
        index: 0,
        text: p.table.text.slice(0, p.count).join(""),
        logprobs: null,
        finish_reason: p.finishReason,
      },
    ],
    usage: p.usage ?? usage(0, p.count),
  });
}

/** Deterministic unit vectors: the same input always embeds to the same 8 numbers. */
export function embed(input: string, dims = 8): number[] {
  // FNV-1a seeds a xorshift32 stream; cheap, stable across runs and platforms.
  let h = 0x811c9dc5;
  for (let i = 0; i < input.length; i++) {
    h ^= input.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // xorshift never leaves 0; any other seed will do.
  if (h === 0) h = 0x9e3779b9;
  const v: number[] = [];
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    h ^= h << 13;
    h ^= h >>> 17;
    h ^= h << 5;
    h >>>= 0;
    const x = (h / 0xffffffff) * 2 - 1;
    v.push(x);
    norm += x * x;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  return v.map((x) => Math.round(x * scale * 1e6) / 1e6);
}
