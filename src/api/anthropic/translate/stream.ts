/**
 * The streaming translator: the upstream's chat stream, as steps (`api/chat/chunk.ts`), in;
 * Anthropic SSE text out (docs/translation.md §3.6). A pure state machine —
 * no I/O, no timers, no JSON parsing; `api/chat/translated-body.ts` is the thin wrapper that
 * reads bytes and writes the result.
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
 * Tool calls are buffered and emitted whole at the end: the arguments of parallel calls arrive
 * split and interleaved by index, sometimes cumulative or broken (`api/chat/tool-calls.ts`),
 * and a block must carry valid JSON or clients silently turn it into `{}`.
 */

import { sseEvent } from "../../../shared/sse.ts";
import type { ChatDelta, ChatStep } from "../../chat/chunk.ts";
import { ToolCalls } from "../../chat/tool-calls.ts";
import { type ToolInput, toolInput } from "../../chat/tool-json.ts";
import type { ChatTranslator, StreamFailure } from "../../chat/translator.ts";
import type { OaiUsage } from "../../chat/wire.ts";
import {
  type AnthropicErrorType,
  errorEvent,
  fromQmError,
  fromUpstream,
  streamErrorType,
} from "../errors.ts";
import { sanitizeToolId } from "../ids.ts";
import type { StopReason } from "../wire.ts";
import { anthropicUsage, ending, estimateOutput } from "./finish.ts";
import { StopMatcher } from "./stop-match.ts";

export interface StreamOptions {
  id: string;
  /** The model name the client asked for (echoed back). */
  model: string;
  stopSequences: readonly string[];
  /**
   * Prompt tokens to report until (or unless) the server reports its own: read when
   * `message_start` goes out, by then the upstream's exact count when it could give one (the
   * caller counts before it sends), else the estimate.
   */
  inputTokens: number;
  onToolInput?: (name: string, how: ToolInput["how"]) => void;
  /**
   * Counts the tokens of the answer delivered when a stop sequence ended it (its thinking and
   * text up to the stop) with the upstream's tokenizer; null: it cannot. Absent: estimated.
   * The unstreamed answer counts the same text the same way (`messages.ts`), so both report
   * the same `output_tokens`.
   */
  countOutput?: (delivered: string) => Promise<number | null>;
}

type Rec = Record<string, unknown>;

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

export class StreamTranslator implements ChatTranslator {
  private started = false;
  /** True once `message_stop` or `error` was written: nothing follows either. */
  finished = false;
  private next = 0;
  private open: { kind: "text" | "thinking"; index: number } | null = null;
  private readonly tools = new ToolCalls();
  private finish: string | null = null;
  private upstreamStop: unknown = null;
  private usage: OaiUsage | null = null;
  private cacheN: unknown;
  private sawDone = false;
  private chars = 0;
  /** How the message ended; null until `message_delta` went out. */
  stopReason: StopReason | null = null;
  readonly relaysStatus = true;
  /** The request's stop sequences, applied to the text here (`stop-match.ts`). */
  private readonly stops: StopMatcher | null;
  /** With stop sequences: the thinking and text that went out, for `countOutput`. */
  private delivered = "";
  /** The end still to write after a stop sequence, once its output is counted. */
  private pendingEnd: Promise<string> | null = null;

  constructor(private readonly opts: StreamOptions) {
    this.stops = opts.stopSequences.some((s) => s !== "")
      ? new StopMatcher(opts.stopSequences)
      : null;
  }

  get answered(): boolean {
    return this.stopReason !== null;
  }

  get toolCalls(): boolean {
    return this.stopReason === "tool_use";
  }

  /** Nothing at once: `message_start` goes out with the first event, ping or comment. */
  start(): string {
    return "";
  }

  /** `message_start`, once; later calls return "". */
  private begin(): string {
    if (this.started || this.finished) return "";
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
          input_tokens: typeof prompt === "number" ? prompt : this.opts.inputTokens,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    });
  }

  /** A keep-alive; opens the message first so the client sees it has begun. */
  keepAlive(): string {
    return this.finished ? "" : this.begin() + PING;
  }

  step(s: ChatStep): string {
    if (this.finished) return "";
    if (s.kind === "done") {
      this.sawDone = true;
      return this.complete();
    }
    if (s.kind === "error") return this.failWith(streamErrorType(s.error), s.message);
    return this.delta(s);
  }

  private delta(s: ChatDelta): string {
    if (s.usage !== null) this.usage = s.usage;
    if (s.timings !== null) this.cacheN = s.timings.cache_n;
    let out = this.begin();
    // Native block order within one chunk: thinking → text → tool_use (LiteLLM does the same).
    if (s.reasoning !== "") {
      out += this.blockDelta("thinking", s.reasoning, s.literal);
      if (this.stops) this.delivered += s.reasoning;
    }
    if (s.text !== "") {
      if (this.stops) {
        const pass = this.stops.push(s.text);
        if (pass !== "") out += this.blockDelta("text", pass, null);
        this.delivered += pass;
        // The text reached a stop sequence: the message ends here (the wrapper then stops
        // the upstream, which is still generating).
        if (this.stops.matched !== null) return out + this.stopHere();
      } else {
        out += this.blockDelta("text", s.text, s.literal);
      }
    }
    if (s.tools !== null) for (const d of s.tools) this.tools.add(d);
    if (s.finish !== null) this.finish = s.finish;
    if (s.stopReason !== null) this.upstreamStop = s.stopReason;
    return out;
  }

  /**
   * The upstream body ended. After a finish_reason or `[DONE]` that is a normal end; before
   * either, the server died mid-answer and the client must not take the text as complete.
   */
  end(): string {
    if (this.finished) return "";
    if (this.finish !== null || this.sawDone) return this.complete();
    return this.failWith("api_error", `model "${this.opts.model}" stream ended unexpectedly`);
  }

  /** The answer failed after the 200: an `error` event in Anthropic's words. */
  fail(f: StreamFailure): string {
    if (f.kind === "broken") return this.failWith("api_error", f.message);
    const a = f.kind === "qm" ? fromQmError(f.error) : fromUpstream(f.refusal, f.model);
    return this.failWith(a.type, a.message);
  }

  /** Ends the stream with an `error` event after closing the open block. */
  private failWith(type: AnthropicErrorType, message: string): string {
    if (this.finished) return "";
    const out = this.heldText() + this.closeOpen() + errorEvent(type, message);
    this.finished = true;
    return out;
  }

  /** `literal`: the text's JSON string literal when it came escaped (a huge line's piece). */
  private blockDelta(kind: "text" | "thinking", text: string, literal: string | null): string {
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
    return out + deltaEvent(this.open.index, kind, literal ?? JSON.stringify(text));
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
   * A stop sequence ended the answer: the blocks close now and the upstream is read no more;
   * `message_delta` follows once the delivered text is counted (`settle`). Its usage is that of
   * what was delivered — the upstream was stopped before it could report its own.
   */
  private stopHere(): string {
    const count = this.opts.countOutput;
    if (!count) return this.complete();
    const out = this.begin() + this.closeOpen();
    this.finished = true;
    const matched = this.stops?.matched ?? null;
    this.pendingEnd = count(this.delivered).then(
      (n) => this.endMessage({ stop_reason: "stop_sequence", stop_sequence: matched }, n),
      () => this.endMessage({ stop_reason: "stop_sequence", stop_sequence: matched }, null),
    );
    return out;
  }

  settle(): Promise<string> | null {
    const pending = this.pendingEnd;
    this.pendingEnd = null;
    return pending;
  }

  /** The text the stop sequences held back, now that no more follows. */
  private heldText(): string {
    const rest = this.stops?.flush() ?? "";
    return rest === "" ? "" : this.blockDelta("text", rest, null);
  }

  private complete(): string {
    let out = this.begin() + this.heldText() + this.closeOpen();
    let hasTools = false;
    // Generation ended at the stop sequence: no call after it was made.
    const matched = this.stops?.matched ?? null;
    for (const call of matched === null ? this.tools.all : []) {
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
    this.finished = true;
    return out + this.endMessage(end, matched === null ? undefined : null);
  }

  /**
   * `message_delta` and `message_stop`. `delivered`: after a stop sequence, the count of what
   * was delivered (null: not known, estimated) — the upstream's own usage, if any came, covers
   * more than that; otherwise (`undefined`) the upstream's usage.
   */
  private endMessage(
    end: { stop_reason: StopReason; stop_sequence: string | null },
    delivered?: number | null,
  ): string {
    this.stopReason = end.stop_reason;
    const usage = anthropicUsage(this.usage, this.cacheN, {
      input: this.opts.inputTokens,
      output: estimateOutput(this.chars),
    });
    if (delivered !== undefined) usage.output_tokens = delivered ?? estimateOutput(this.chars);
    return sse("message_delta", { delta: end, usage }) + sse("message_stop", {});
  }
}
