/**
 * The stream translator: the upstream's chat stream, as steps (`api/chat/chunk.ts`), in;
 * Ollama's NDJSON lines (one JSON object and "\n" each) out. Pure: no I/O, no JSON parsing, and
 * no clock of its own (it is handed one), so it is tested by feeding it steps; the bytes are
 * read and framed by `api/chat/translated-body.ts`.
 *
 * Text and thinking deltas become lines as they come. Tool calls are gathered and sent whole
 * in one line once the answer's `finish_reason` says they are complete (Ollama never sends a
 * partial call). The `done` line goes out at `[DONE]` (or the body's end after a finish
 * reason), after the usage chunk that `stream_options.include_usage` asks for, so its counts
 * are the upstream's own. NDJSON has no comment and no keep-alive line: `: qm-status` comments
 * are not relayed, and a quiet upstream writes nothing.
 */

import type { ChatDelta, ChatStep } from "../chat/chunk.ts";
import { ToolCalls } from "../chat/tool-calls.ts";
import { type ChatTranslator, failureMessage, type StreamFailure } from "../chat/translator.ts";
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
import { wholeCalls } from "./tool-calls.ts";

export interface StreamShape {
  kind: Kind;
  /** The model as the client named it. */
  model: string;
  think: Think;
  timing: Timing;
  clock: Clock;
}

export class NdjsonTranslator implements ChatTranslator {
  private readonly head: string;
  private readonly counts: Counts = {};
  private readonly calls = new ToolCalls();
  private firstToken: number | null = null;
  private finish: string | null = null;
  private deltas = 0;
  /** The last line went out (`done: true` or an error). */
  finished = false;
  /** The `done` line went out: the answer is whole. */
  answered = false;
  /** The answer ended in tool calls. */
  toolCalls = false;
  readonly relaysStatus = false;

  constructor(private readonly s: StreamShape) {
    this.head = `{"model":${JSON.stringify(s.model)},"created_at":"`;
  }

  /** Nothing until the model says something: every line is an answer's. */
  start(): string {
    return "";
  }

  keepAlive(): string {
    return "";
  }

  /** One step; returns the lines it makes ("" for none). */
  step(s: ChatStep): string {
    if (this.finished) return "";
    if (s.kind === "done") return this.done();
    if (s.kind === "error") return this.failLine(s.message);
    return this.delta(s);
  }

  private delta(s: ChatDelta): string {
    if (s.usage !== null || s.timings !== null) readCounts(this.counts, s.usage, s.timings);
    let out = "";
    const t = this.s.think !== false ? s.reasoning : "";
    if (s.text !== "" || t !== "") {
      this.firstToken ??= this.s.clock.now();
      this.deltas++;
      out +=
        t === ""
          ? this.textLine(s.text, s.literal)
          : this.line({ content: s.text, thinking: t }, null);
    }
    if (s.tools !== null) {
      this.firstToken ??= this.s.clock.now();
      for (const d of s.tools) this.calls.add(d);
    }
    if (s.finish !== null) {
      this.finish = s.finish;
      out += this.flushCalls();
    }
    return out;
  }

  /** The upstream's body ended. Without a finish, the answer was cut short: an error line. */
  end(): string {
    if (this.finished) return "";
    if (this.finish === null && this.calls.size === 0) {
      return this.failLine(`model "${this.s.model}" ended its answer without finishing it`);
    }
    return this.done();
  }

  fail(f: StreamFailure): string {
    return this.failLine(failureMessage(f));
  }

  /** The error line (Ollama's stream error: `{"error": "…"}`); the stream is over. */
  private failLine(message: string): string {
    if (this.finished) return "";
    this.finished = true;
    return `${JSON.stringify({ error: message })}\n`;
  }

  private done(): string {
    const calls = this.flushCalls();
    this.finished = true;
    this.answered = true;
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
    const toolCalls = wholeCalls(this.calls.all);
    this.calls.clear();
    return this.line({ content: "", toolCalls }, null);
  }

  /** The common line, written without building an object (`literal`: the text, escaped). */
  private textLine(content: string, literal: string | null): string {
    const text = literal ?? JSON.stringify(content);
    const body =
      this.s.kind === "chat"
        ? `"message":{"role":"assistant","content":${text}}`
        : `"response":${text}`;
    return `${this.head}${this.s.clock.iso()}",${body},"done":false}\n`;
  }

  private line(p: Piece, final: Record<string, unknown> | null): string {
    return `${JSON.stringify(lineObject(this.s.model, this.s.clock.iso(), this.s.kind, p, final))}\n`;
  }
}
