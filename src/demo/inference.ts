/**
 * Inference routes of the demo upstream: chat completions, legacy completions, embeddings.
 * Streaming writes one SSE event per token through a Bun "direct" stream (no per-chunk
 * queueing) and flushes it at once, so a proxy sees tokens exactly when they are made. Its pacing
 * sleeps on real time: the demo is a separate fake model process, not qm, and its tokens take
 * the time a real model's would.
 */
import {
  buildReasoning,
  buildToolCall,
  chatResponse,
  chatStreamPlan,
  type DemoToolCall,
  embed,
  type StreamPlan,
  type TokenTable,
  textResponse,
  textStreamPlan,
  type Usage,
  usage,
  wordTokens,
} from "./completion.ts";
import type { BadSse, DemoOptions } from "./flags.ts";
import {
  json,
  jsonText,
  openAiError,
  readJsonObject,
  sse,
  stalledJson,
  untilAborted,
} from "./http.ts";
import { contextOverflow, renderPrompt, tokenCount } from "./llama-extras.ts";
import type { DemoSlots } from "./slots.ts";
import { loopAnswer, offeredTools, pickTool, toolArguments } from "./tools.ts";

export interface DemoContext {
  options: DemoOptions;
  /** `--slots`: the one slot whose cached prefix chat usage reports. */
  slots?: DemoSlots | null;
  table: TokenTable;
  /** Simulated crash: the process dies with exit code 1 after `message` reaches stderr. */
  crash(message: string): void;
  /** Increasing counter for response and tool call ids. */
  nextId(): number;
}

interface Common {
  body: Record<string, unknown>;
  model: string;
  id: number;
  created: number;
  /** `max_completion_tokens` / `max_tokens`, else infinity. */
  limit: number;
  count: number;
  finish: "stop" | "length";
  promptTokens: number;
  stream: boolean;
  includeUsage: boolean;
}

function common(ctx: DemoContext, body: Record<string, unknown>, text: string): Common {
  const max = body.max_completion_tokens ?? body.max_tokens;
  const limit = typeof max === "number" && max >= 0 ? Math.floor(max) : Number.POSITIVE_INFINITY;
  const count = Math.min(ctx.options.tokens, limit);
  const so = body.stream_options;
  return {
    body,
    model: typeof body.model === "string" ? body.model : ctx.options.name,
    id: ctx.nextId(),
    created: Math.floor(Date.now() / 1000),
    limit,
    count,
    finish: count < ctx.options.tokens ? "length" : "stop",
    // A rough, deterministic stand-in for a tokenizer: ~4 bytes of request per token.
    promptTokens: Math.max(1, Math.ceil(text.length / 4)),
    stream: body.stream === true,
    includeUsage:
      typeof so === "object" &&
      so !== null &&
      (so as Record<string, unknown>).include_usage === true,
  };
}

export async function chatCompletions(ctx: DemoContext, req: Request): Promise<Response> {
  const parsed = await readJsonObject(req);
  if (typeof parsed === "string") return openAiError(400, parsed);
  const c = common(ctx, ...parsed);
  if (!Array.isArray(c.body.messages)) {
    return openAiError(400, "'messages' must be an array", "invalid_request_error", "messages");
  }
  const overflow = contextOverflow(ctx.options, c.body);
  if (overflow) return overflow;
  const turn = toolTurn(ctx, c);
  const { toolCall } = turn;
  const thinking = ctx.options.reasoningTokens;
  const reasoning = thinking ? buildReasoning(thinking) : undefined;
  const completionTokens =
    turn.count + (toolCall === null ? 0 : toolCall.pieces.length + 1) + (thinking ?? 0);
  const input = {
    id: `chatcmpl-demo-${c.id}`,
    created: c.created,
    model: c.model,
    table: turn.table,
    count: turn.count,
    finishReason: toolCall === null ? turn.finish : ("tool_calls" as const),
    toolCall,
    ...(reasoning ? { reasoning } : {}),
  };
  const cached = ctx.slots ? ctx.slots.take(c.body) : ctx.options.cachedTokens;
  // The prompt as the demo's own /apply-template renders it and /tokenize counts it.
  const prompt = tokenCount(renderPrompt(c.body.messages, c.body.tools));
  const use = usage(prompt, completionTokens, cached);
  if (c.stream) {
    return streamPlan(ctx, req, chatStreamPlan({ ...input, usage: c.includeUsage ? use : null }));
  }
  if (ctx.options.stallAfterTokens !== undefined) {
    return stalledJson(req, chatResponse({ ...input, usage: use }));
  }
  await generateWhole(ctx, completionTokens);
  return jsonText(chatResponse({ ...input, usage: use }));
}

/**
 * `--tool-calls`: the answer that ends the loop once the tool results are in (its own text),
 * else the usual text followed by a call of the tool `tools.ts` picks. Without the flag, the
 * usual text.
 */
interface Turn {
  table: TokenTable;
  count: number;
  finish: "stop" | "length";
  toolCall: DemoToolCall | null;
}

function toolTurn(ctx: DemoContext, c: Common): Turn {
  const plain: Turn = { table: ctx.table, count: c.count, finish: c.finish, toolCall: null };
  const { options } = ctx;
  if (!options.toolCalls) return plain;
  const answer = loopAnswer(c.body.messages, options.toolRounds ?? 1);
  if (answer !== null) {
    const table = wordTokens(answer);
    const count = Math.min(table.text.length, c.limit);
    return { table, count, finish: count < table.text.length ? "length" : "stop", toolCall: null };
  }
  // A model calls only what it was offered: no tools, no call.
  const tool = pickTool(offeredTools(c.body.tools), options.tool);
  if (tool === null) return plain;
  const call = buildToolCall(tool.name, `call_demo_${c.id}`, toolArguments(tool, options.name));
  // What it says before the call: one short sentence, cut as `--tokens` / max_tokens say.
  const table = wordTokens(`Let me call ${tool.name} for that.`);
  return { table, count: Math.min(table.text.length, c.count), finish: c.finish, toolCall: call };
}

export async function completions(ctx: DemoContext, req: Request): Promise<Response> {
  const parsed = await readJsonObject(req);
  if (typeof parsed === "string") return openAiError(400, parsed);
  const c = common(ctx, ...parsed);
  const input = {
    id: `cmpl-demo-${c.id}`,
    created: c.created,
    model: c.model,
    table: ctx.table,
    count: c.count,
    finishReason: c.finish,
  };
  const use: Usage = usage(c.promptTokens, c.count);
  if (c.stream) {
    return streamPlan(ctx, req, textStreamPlan({ ...input, usage: c.includeUsage ? use : null }));
  }
  if (ctx.options.stallAfterTokens !== undefined) {
    return stalledJson(req, textResponse({ ...input, usage: use }));
  }
  await generateWhole(ctx, c.count);
  return jsonText(textResponse({ ...input, usage: use }));
}

export async function embeddings(ctx: DemoContext, req: Request): Promise<Response> {
  const parsed = await readJsonObject(req);
  if (typeof parsed === "string") return openAiError(400, parsed);
  const [body] = parsed;
  const raw = body.input;
  // OpenAI accepts a string, an array of strings, a token array or an array of token arrays.
  const items: unknown[] = Array.isArray(raw)
    ? raw.length > 0 && typeof raw[0] === "number"
      ? [raw]
      : raw
    : [raw];
  if (raw === undefined || items.length === 0 || items.some((x) => !isEmbeddable(x))) {
    return openAiError(400, "'input' must be a string or an array of strings", undefined, "input");
  }
  const base64 = body.encoding_format === "base64";
  const data = items.map((item, index) => {
    const vector = embed(typeof item === "string" ? item : (item as number[]).join(","));
    return {
      object: "embedding",
      index,
      embedding: base64 ? Buffer.from(new Float32Array(vector).buffer).toString("base64") : vector,
    };
  });
  const tokens = items.reduce<number>(
    (n, x) => n + (typeof x === "string" ? Math.max(1, Math.ceil(x.length / 4)) : (x as []).length),
    0,
  );
  return json({
    object: "list",
    data,
    model: typeof body.model === "string" ? body.model : ctx.options.name,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

function isEmbeddable(x: unknown): boolean {
  return typeof x === "string" || (Array.isArray(x) && x.every((t) => typeof t === "number"));
}

/** Non-streamed responses take as long as their tokens would have taken to stream. */
async function generateWhole(ctx: DemoContext, tokens: number): Promise<void> {
  const { crashAfterTokens: crashAt, tokenMs, firstTokenMs } = ctx.options;
  if (firstTokenMs) await Bun.sleep(firstTokenMs);
  if (crashAt !== null && crashAt < tokens) {
    if (tokenMs > 0 && crashAt > 0) await Bun.sleep(crashAt * tokenMs);
    ctx.crash(crashMessage(ctx, crashAt));
    // Only reached when the crash hook does not exit (in-process tests).
    throw new Error("demo upstream crashed");
  }
  if (tokenMs > 0 && tokens > 0) await Bun.sleep(tokens * tokenMs);
}

function crashMessage(ctx: DemoContext, n: number): string {
  return `demo-upstream ${ctx.options.name}: simulated crash after ${n} tokens (--crash-after-tokens)`;
}

/** `--bad-sse`: the tail a broken server would send instead of the usual one. */
function brokenTail(tail: string[], kind: BadSse | undefined): string[] {
  switch (kind) {
    case undefined:
      return tail;
    case "no-done":
      return tail.slice(0, -1);
    case "mid-event": {
      const last = tail[0] as string;
      return [last.slice(0, Math.floor(last.length / 2))];
    }
    case "not-json":
      return ["data: upstream error: out of memory\n\n", ...tail.slice(-1)];
  }
}

function streamPlan(ctx: DemoContext, req: Request, plan: StreamPlan): Response {
  const { tokenMs, crashAfterTokens: crashAt, firstTokenMs, stallAfterTokens } = ctx.options;
  const tail = brokenTail(plan.tail, ctx.options.badSse);
  const stream = new ReadableStream({
    type: "direct",
    async pull(controller) {
      for (const frame of plan.lead) controller.write(frame);
      if (firstTokenMs) {
        // A long prefill: headers and the role chunk are out, then silence.
        controller.flush();
        await Bun.sleep(firstTokenMs);
        if (req.signal.aborted) return controller.close();
      }
      for (let i = 0; i < plan.tokens.length; i++) {
        if (i === stallAfterTokens) {
          // A wedged server: what it made so far is out, then nothing, connection open.
          await controller.flush();
          await untilAborted(req);
          return controller.close();
        }
        if (crashAt !== null && i === crashAt) {
          // Let the tokens already made reach the client, as a real crash mid-stream would.
          await controller.flush(true);
          ctx.crash(crashMessage(ctx, i));
          // Only reached when the crash hook does not exit (in-process tests): end the body
          // early, without the final chunk and [DONE].
          return controller.close();
        }
        if (tokenMs > 0) {
          controller.flush();
          await Bun.sleep(tokenMs);
          if (req.signal.aborted) return controller.close();
        }
        const wrote = controller.write(plan.tokens[i] as string);
        if (typeof wrote !== "number") await wrote;
        // 0 means the client went away: stop generating for nobody.
        else if (wrote === 0) return controller.close();
      }
      for (const frame of tail) controller.write(frame);
      controller.close();
    },
  });
  return sse(stream);
}
