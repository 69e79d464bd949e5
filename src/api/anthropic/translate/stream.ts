/**
 * The streaming translator: OpenAI chat completion chunks in, Anthropic SSE text out
 * (ANTHROPIC.md §3). A pure state machine — no I/O, no timers — fed one upstream SSE event at
 * a time; `stream-body.ts` is the thin wrapper that reads bytes and writes the result.
 *
 * The grammar it writes (https://docs.anthropic.com/en/docs/build-with-claude/streaming):
 *   message_start (content_block_start content_block_delta* content_block_stop)*
 *   message_delta message_stop      — or `error` in place of the last two.
 * What the real SDKs require, and why the code below does it:
 * - every event has an `event:` line (the TS SDK drops `data:`-only events);
 * - block indices are 0, 1, 2… in start order and one block is open at a time (the SDK pushes
 *   blocks as they start and applies text/json helpers to the last one);
 * - `message_start` and `message_delta` both carry `usage` (the SDK reads it unguarded);
 * - a thinking block gets a `signature_delta` before it closes (the Python SDK needs one);
 * - tool_use blocks start with `input: {}`.
 * Tool calls are buffered and emitted whole at the end (the "buffered" mode of §3.2): the
 * arguments of parallel calls arrive split and interleaved by index, sometimes cumulative or
 * broken, and a block must carry valid JSON or clients silently turn it into `{}`.
 */

import { sseEvent } from "../../../shared/sse.ts";
import { type ToolInput, toolInput } from "../../chat/tool-json.ts";
import type { OaiUsage } from "../../chat/wire.ts";
import type { AnswerFigures } from "../../exchange/figures.ts";
import { errorEvent, streamErrorType, upstreamErrorObject } from "../errors.ts";
import { sanitizeToolId } from "../ids.ts";
import type { StopReason } from "../wire.ts";
import { anthropicUsage, ending, estimateOutput } from "./finish.ts";
import { contentText } from "./response.ts";
import { StopMatcher } from "./stop-match.ts";

export interface StreamOptions {
  id: string;
  /** The model name the client asked for (echoed back). */
  model: string;
  stopSequences: readonly string[];
  /** Prompt tokens to report until (or unless) the server reports its own. */
  inputEstimate: number;
  onToolInput?: (name: string, how: ToolInput["how"]) => void;
}

interface ToolCall {
  id: string | null;
  name: string | null;
  args: string;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);

function sse(type: string, data: Rec): string {
  return sseEvent(JSON.stringify({ type, ...data }), type);
}

export const PING = sse("ping", {});

/**
 * The event of every token, written out by hand: the same bytes `sse()` would produce for
 * `{type, index, delta: {type, text|thinking}}`, without building and spreading objects.
 * `literal` is the text as a JSON string literal, quotes included.
 */
function deltaEvent(index: number, kind: "text" | "thinking", literal: string): string {
  const delta =
    kind === "text"
      ? `{"type":"text_delta","text":${literal}}`
      : `{"type":"thinking_delta","thinking":${literal}}`;
  return sseEvent(
    `{"type":"content_block_delta","index":${index},"delta":${delta}}`,
    "content_block_delta",
  );
}

export class StreamTranslator {
  private started = false;
  private done = false;
  private next = 0;
  private open: { kind: "text" | "thinking"; index: number } | null = null;
  /** Every tool call in order of appearance, and the latest one per upstream index. */
  private tools: ToolCall[] = [];
  private byIndex = new Map<number, ToolCall>();
  private finish: string | null = null;
  private upstreamStop: unknown = null;
  private usage: OaiUsage | null = null;
  private cacheN: unknown;
  private sawDone = false;
  private chars = 0;
  /** How the message ended; null until `message_delta` went out. */
  stopReason: StopReason | null = null;
  /** Told each upstream chunk, for the request's record (token counts, finish reason). */
  figures: AnswerFigures | null = null;
  /** The request's stop sequences, applied to the text here (`stop-match.ts`). */
  private readonly stops: StopMatcher | null;

  constructor(private readonly opts: StreamOptions) {
    this.stops = opts.stopSequences.some((s) => s !== "")
      ? new StopMatcher(opts.stopSequences)
      : null;
  }

  /** True once `message_stop` or `error` was written: nothing follows either. */
  get finished(): boolean {
    return this.done;
  }

  /** `message_start`, once; later calls return "". */
  start(): string {
    if (this.started || this.done) return "";
    this.started = true;
    const prompt = this.usage?.prompt_tokens;
    return sse("message_start", {
      message: {
        id: this.opts.id,
        type: "message",
        role: "assistant",
        model: this.opts.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: typeof prompt === "number" ? prompt : this.opts.inputEstimate,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    });
  }

  /** A keep-alive; opens the message first so the client sees it has begun. */
  ping(): string {
    return this.done ? "" : this.start() + PING;
  }

  /** One upstream SSE event (`data` and, when present, its `event:` name). */
  event(data: string, name?: string): string {
    if (this.done) return "";
    if (data.trim() === "[DONE]") {
      this.sawDone = true;
      return this.complete();
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return ""; // not a chunk: servers interleave odd lines, skipping them is what others do
    }
    if (!isRec(chunk)) return "";
    if (name === "error" || chunk.error !== undefined) {
      const e = upstreamErrorObject(chunk) ?? {};
      const message = typeof e.message === "string" ? e.message : "the model failed mid-answer";
      return this.fail(streamErrorType(e), message);
    }
    if (isRec(chunk.usage)) this.usage = chunk.usage as OaiUsage;
    if (isRec(chunk.timings)) this.cacheN = chunk.timings.cache_n;
    this.figures?.chunk(chunk);
    let out = this.start();
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRec(choice)) return out;
    const delta = isRec(choice.delta) ? choice.delta : {};
    // Native block order within one chunk: thinking → text → tool_use (LiteLLM does the same).
    const reasoning = contentText(delta.reasoning_content) || contentText(delta.reasoning);
    if (reasoning !== "") out += this.blockDelta("thinking", reasoning);
    const text = contentText(delta.content);
    if (text !== "") {
      if (this.stops) {
        const pass = this.stops.push(text);
        if (pass !== "") out += this.blockDelta("text", pass);
        // The text reached a stop sequence: the message ends here (the wrapper then stops
        // the upstream, which is still generating).
        if (this.stops.matched !== null) return out + this.complete();
      } else {
        out += this.blockDelta("text", text);
      }
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const tc of delta.tool_calls) if (isRec(tc)) this.toolDelta(tc);
    }
    if (typeof choice.finish_reason === "string") this.finish = choice.finish_reason;
    if (choice.stop_reason !== undefined && choice.stop_reason !== null) {
      this.upstreamStop = choice.stop_reason;
    }
    return out;
  }

  /**
   * The upstream body ended. After a finish_reason or `[DONE]` that is a normal end; before
   * either, the server died mid-answer and the client must not take the text as complete.
   */
  end(): string {
    if (this.done) return "";
    if (this.finish !== null || this.sawDone) return this.complete();
    return this.fail("api_error", `model "${this.opts.model}" stream ended unexpectedly`);
  }

  /** Ends the stream with an `error` event after closing the open block. */
  fail(type: Parameters<typeof errorEvent>[0], message: string): string {
    if (this.done) return "";
    const out = this.heldText() + this.closeOpen() + errorEvent(type, message);
    this.done = true;
    return out;
  }

  /**
   * A piece of a huge delta's text, still JSON-escaped as the upstream sent it (DeltaScanner):
   * it goes out inside a JSON string as it is.
   */
  escapedDelta(kind: "text" | "thinking", escaped: string): string {
    if (this.done || escaped === "") return "";
    if (kind === "text" && this.stops) {
      // Stop sequences match the text itself: unescape the piece and take the common path.
      return (
        this.start() +
        this.event(
          JSON.stringify({ choices: [{ delta: { content: JSON.parse(`"${escaped}"`) } }] }),
        )
      );
    }
    return this.start() + this.blockDelta(kind, escaped, `"${escaped}"`);
  }

  private blockDelta(
    kind: "text" | "thinking",
    text: string,
    literal = JSON.stringify(text),
  ): string {
    let out = "";
    if (this.open?.kind !== kind) {
      out += this.closeOpen();
      const index = this.next++;
      this.open = { kind, index };
      const block =
        kind === "text"
          ? { type: "text", text: "" }
          : { type: "thinking", thinking: "", signature: "" };
      out += sse("content_block_start", { index, content_block: block });
    }
    this.chars += text.length;
    return out + deltaEvent(this.open.index, kind, literal);
  }

  private closeOpen(): string {
    const open = this.open;
    if (!open) return "";
    this.open = null;
    let out = "";
    if (open.kind === "thinking") {
      const delta = { type: "signature_delta", signature: "" };
      out += sse("content_block_delta", { index: open.index, delta });
    }
    return out + sse("content_block_stop", { index: open.index });
  }

  /**
   * Accumulates one tool-call delta. A call is keyed by its `index` (0 when missing: older
   * mistral.rs); the same index with a new id and a name is a new call (servers that put every
   * call on index 0, LiteLLM #21331; vLLM's converter uses the same rule). A fragment that
   * repeats everything so far is cumulative (openclaw #89070).
   */
  private toolDelta(tc: Rec): void {
    const key = typeof tc.index === "number" ? tc.index : 0;
    const fn = isRec(tc.function) ? tc.function : {};
    const id = typeof tc.id === "string" && tc.id !== "" ? tc.id : null;
    const name = typeof fn.name === "string" && fn.name !== "" ? fn.name : null;
    let call = this.byIndex.get(key);
    // A name on a call that has one starts a new call, unless it repeats the same call (same
    // id, or no id and the same name: servers that resend the header with every fragment).
    const another = name !== null && call?.name && (id ? id !== call.id : name !== call.name);
    if (!call || another) {
      call = { id: null, name: null, args: "" };
      this.byIndex.set(key, call);
      this.tools.push(call);
    }
    call.id ??= id;
    call.name ??= name;
    const args = fn.arguments;
    if (typeof args === "string") {
      call.args = call.args.length >= 2 && args.startsWith(call.args) ? args : call.args + args;
    } else if (isRec(args)) {
      call.args = JSON.stringify(args);
    }
  }

  /** The text the stop sequences held back, now that no more follows. */
  private heldText(): string {
    const rest = this.stops?.flush() ?? "";
    return rest === "" ? "" : this.blockDelta("text", rest);
  }

  private complete(): string {
    let out = this.start() + this.heldText() + this.closeOpen();
    let hasTools = false;
    // Generation ended at the stop sequence: no call after it was made.
    const matched = this.stops?.matched ?? null;
    for (const call of matched === null ? this.tools : []) {
      if (!call.name) continue; // nothing can run a call without a name
      const parsed = toolInput(call.args);
      if (parsed.how !== "ok") this.opts.onToolInput?.(call.name, parsed.how);
      const json = JSON.stringify(parsed.input);
      this.chars += json.length;
      const index = this.next++;
      hasTools = true;
      out += sse("content_block_start", {
        index,
        content_block: {
          type: "tool_use",
          id: sanitizeToolId(call.id),
          name: call.name,
          input: {},
        },
      });
      out += sse("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: json },
      });
      out += sse("content_block_stop", { index });
    }
    const end =
      matched !== null
        ? { stop_reason: "stop_sequence" as const, stop_sequence: matched }
        : ending(this.finish, this.upstreamStop, this.opts.stopSequences, hasTools);
    this.stopReason = end.stop_reason;
    const usage = anthropicUsage(this.usage, this.cacheN, {
      input: this.opts.inputEstimate,
      output: estimateOutput(this.chars),
    });
    out += sse("message_delta", { delta: end, usage });
    out += sse("message_stop", {});
    this.done = true;
    return out;
  }
}
