/**
 * The pure stream transducer: the upstream's OpenAI stream, one SSE `data` payload at a time,
 * → Ollama's NDJSON lines (one JSON object and "\n" each). No I/O and no clock of its own (it
 * is handed one), so it is tested by feeding it payloads; the bytes are framed by `SseEvents`
 * in `ndjson-body.ts`.
 *
 * Text and thinking deltas become lines as they come. Tool calls are gathered and sent whole
 * in one line once the answer's `finish_reason` says they are complete (Ollama never sends a
 * partial call). The `done` line goes out at `[DONE]` (or the body's end after a finish
 * reason), after the usage chunk that `stream_options.include_usage` asks for, so its counts
 * are the upstream's own.
 */

import type { OaiToolCallDelta } from "../chat/wire.ts";
import type { AnswerFigures } from "../exchange/figures.ts";
import {
  type Clock,
  type Counts,
  doneReason,
  type Kind,
  lineObject,
  type Piece,
  readCounts,
  stats,
  type Timing,
} from "./lines.ts";
import type { Think } from "./options.ts";
import { ToolCallAssembly } from "./tool-calls.ts";

export interface StreamShape {
  kind: Kind;
  /** The model as the client named it. */
  model: string;
  think: Think;
  timing: Timing;
  clock: Clock;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null;

export class NdjsonTranslator {
  private readonly head: string;
  private readonly counts: Counts = {};
  private readonly calls = new ToolCallAssembly();
  private firstToken: number | null = null;
  private finish: string | null = null;
  private deltas = 0;
  /** The last line went out (`done: true` or an error). */
  finished = false;
  /** The answer ended in tool calls. */
  toolCalls = false;
  /** Told each upstream chunk, for the request's record (token counts, finish reason). */
  figures: AnswerFigures | null = null;

  constructor(private readonly s: StreamShape) {
    this.head = `{"model":${JSON.stringify(s.model)},"created_at":"`;
  }

  /** One SSE `data` payload; returns the lines it makes ("" for none). */
  event(data: string): string {
    if (this.finished) return "";
    if (data === "[DONE]") return this.done();
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      // Not a chunk (a server's keep-alive text): nothing to say.
      return "";
    }
    if (!isRec(chunk)) return "";
    if (chunk.error !== undefined) return this.fail(upstreamMessage(chunk.error));
    if (chunk.usage !== undefined || chunk.timings !== undefined) readCounts(this.counts, chunk);
    this.figures?.chunk(chunk);
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRec(choice)) return "";
    let out = "";
    const delta = isRec(choice.delta) ? choice.delta : null;
    const content = delta ? delta.content : choice.text;
    const thinking = delta ? (delta.reasoning_content ?? delta.reasoning) : undefined;
    const c = typeof content === "string" ? content : "";
    const t = typeof thinking === "string" && this.s.think !== false ? thinking : "";
    if (c !== "" || t !== "") {
      this.firstToken ??= this.s.clock.now();
      this.deltas++;
      out += t === "" ? this.textLine(c) : this.line({ content: c, thinking: t }, null);
    }
    if (delta && Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) {
      this.firstToken ??= this.s.clock.now();
      this.calls.add(delta.tool_calls as OaiToolCallDelta[]);
    }
    if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
      this.finish = choice.finish_reason;
      out += this.flushCalls();
    }
    return out;
  }

  /** The upstream's body ended. Without a finish, the answer was cut short: an error line. */
  end(): string {
    if (this.finished) return "";
    if (this.finish === null && this.calls.size === 0) {
      return this.fail(`model "${this.s.model}" ended its answer without finishing it`);
    }
    return this.done();
  }

  /** The error line (Ollama's stream error: `{"error": "…"}`); the stream is over. */
  fail(message: string): string {
    if (this.finished) return "";
    this.finished = true;
    return `${JSON.stringify({ error: message })}\n`;
  }

  private done(): string {
    const calls = this.flushCalls();
    this.finished = true;
    const end = this.s.clock.now();
    const c = this.counts;
    // A server that reports no usage: each delta is about one token.
    if (c.evalTokens === undefined) c.evalTokens = this.deltas;
    const final = {
      done_reason: doneReason(this.finish),
      ...stats(this.s.timing, c, this.firstToken, end),
    };
    return calls + this.line({ content: "" }, final);
  }

  private flushCalls(): string {
    if (this.calls.size === 0) return "";
    this.toolCalls = true;
    return this.line({ content: "", toolCalls: this.calls.take() }, null);
  }

  /** The common line, written without building an object. */
  private textLine(content: string): string {
    const body =
      this.s.kind === "chat"
        ? `"message":{"role":"assistant","content":${JSON.stringify(content)}}`
        : `"response":${JSON.stringify(content)}`;
    return `${this.head}${this.s.clock.iso()}",${body},"done":false}\n`;
  }

  private line(p: Piece, final: Record<string, unknown> | null): string {
    return `${JSON.stringify(lineObject(this.s.model, this.s.clock.iso(), this.s.kind, p, final))}\n`;
  }
}

/** The message of an upstream error object (`{"message"}`, or a plain string). */
export function upstreamMessage(e: unknown): string {
  if (typeof e === "string") return e;
  if (isRec(e) && typeof e.message === "string") return e.message;
  return "the model's server reported an error";
}
