/**
 * The streaming translator: the upstream's chat-completions SSE bytes in, Responses API events
 * out (https://platform.openai.com/docs/api-reference/responses-streaming). A pure state
 * machine — no I/O, no timers: `chunk(bytes)` and `end()` return the events they complete;
 * `stream-body.ts` is the thin wrapper that reads and writes.
 *
 * The sequence it writes, each event with the next `sequence_number`:
 *   response.created response.in_progress
 *   ( output_item.added
 *       [reasoning] reasoning_summary_part.added reasoning_summary_text.delta* …text.done …part.done
 *       [message]   content_part.added output_text.delta* output_text.done content_part.done
 *       [function_call] function_call_arguments.delta* function_call_arguments.done
 *     output_item.done )*
 *   response.completed | response.incomplete (a `length` finish) | response.failed
 * Items get `output_index` 0, 1, 2… in the order they start. Reasoning and text are one open
 * item at a time (a change of kind closes the open one); each upstream tool call index is its
 * own `function_call` item, open until the answer ends, so parallel calls whose argument
 * fragments interleave still stream into the right item. The final Response object is built
 * with the shapes of `response.ts`, so a streamed answer ends in the same object a
 * non-streamed one is.
 */

import { createParser, type EventSourceParser } from "eventsource-parser";
import { relayedComment } from "../../../shared/sse.ts";
import type { OaiUsage } from "../../chat/wire.ts";
import type { AnswerFigures } from "../../exchange/figures.ts";
import { itemId } from "./ids.ts";
import {
  callItem,
  messageItem,
  type OutputItem,
  reasoningItem,
  responseObject,
  type Shape,
  usageOf,
} from "./response.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** One Responses event: `type`, `sequence_number`, and the event's own fields. */
export type ResponsesEvent = Obj & { type: string; sequence_number: number };

/**
 * The `type` of an upstream `: qm-status` comment relayed in its place among the events (no
 * Responses event type starts with a colon): `frame` is the comment frame itself, and it takes
 * no sequence number (`-1`).
 */
export const RELAYED = ":comment";

/** A relayed comment among the events, or null for a Responses event. */
export function relayedFrame(e: ResponsesEvent): string | null {
  return e.type === RELAYED ? (e.frame as string) : null;
}

export interface StreamShape extends Shape {
  /** Item ids; random `msg_…`/`fc_…`/`rs_…` unless a test makes them predictable. */
  ids?: (prefix: "msg" | "fc" | "rs") => string;
}

interface Open {
  kind: "text" | "reasoning";
  index: number;
  id: string;
  text: string;
}

interface ToolCall {
  /** Its output index once its item was added (it needs a name first); -1 until then. */
  index: number;
  id: string;
  callId: string;
  name: string;
  args: string;
}

export type Ending = "completed" | "incomplete" | "failed";

/** The most of one unfinished event (or line) the parser holds before the answer fails. */
export const MAX_BUFFERED_CHARS = 64 * 2 ** 20;

export class ResponsesStream {
  private seq = 0;
  private events: ResponsesEvent[] = [];
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  private readonly ids: (prefix: "msg" | "fc" | "rs") => string;
  private started = false;
  /** Output items by output index, as they stand (in progress until their `done`). */
  private readonly output: OutputItem[] = [];
  private open: Open | null = null;
  private readonly calls = new Map<number, ToolCall>();
  private finish: unknown = null;
  private usage: (OaiUsage & Obj) | null = null;
  /** How the response ended; null while it runs. */
  ending: Ending | null = null;
  /** The final Response object (completed, incomplete or failed); null while it runs. */
  final: Obj | null = null;
  /** Told each upstream chunk, for the request's record (token counts, finish reason). */
  figures: AnswerFigures | null = null;

  constructor(private readonly shape: StreamShape) {
    this.ids = shape.ids ?? itemId;
    this.parser = createParser({
      onEvent: (e) => this.event(e.data, e.event),
      // A qm peer's wait status (`: qm-status: loading 42%`) goes on to the client as the same
      // comment, in its place among the events; other comments are dropped.
      onComment: (text) => {
        const frame = relayedComment(text);
        if (frame !== "") this.events.push({ type: RELAYED, sequence_number: -1, frame });
      },
      // An upstream that never ends a line (or an event) cannot make qm hold it all.
      maxBufferSize: MAX_BUFFERED_CHARS,
      onError: (err) => {
        if (err.type === "max-buffer-size-exceeded") {
          this.failWith(
            "server_error",
            `the model's answer held one event of over ${MAX_BUFFERED_CHARS / 2 ** 20} Mi characters`,
          );
        }
      },
    });
  }

  get finished(): boolean {
    return this.ending !== null;
  }

  /** The answer called functions (the agent-loop hold). */
  get hasCalls(): boolean {
    return this.calls.size > 0;
  }

  /** Upstream bytes, however they are split. */
  chunk(bytes: Uint8Array): ResponsesEvent[] {
    if (!this.finished) this.parser.feed(this.decoder.decode(bytes, { stream: true }));
    return this.take();
  }

  /**
   * The upstream's body ended. An answer that got its finish reason ends as it said (its
   * `[DONE]` may be missing); one that did not was cut short and fails.
   */
  end(): ResponsesEvent[] {
    if (!this.finished) {
      this.parser.feed(this.decoder.decode());
      // A last event without its blank line still counts (a `[DONE]` some servers end on);
      // a line cut short is no JSON and is skipped.
      this.parser.reset({ consume: true });
    }
    if (!this.finished) {
      if (this.finish !== null) this.complete();
      else this.failWith("server_error", "the model's answer ended before it finished");
    }
    return this.take();
  }

  /** `response.created` and `response.in_progress`, once. */
  start(): ResponsesEvent[] {
    this.begin();
    return this.take();
  }

  /** A failure (upstream error, cut, timeout): `response.failed`, unless already over. */
  fail(code: string, message: string): ResponsesEvent[] {
    if (!this.finished) this.failWith(code, message);
    return this.take();
  }

  /** One upstream SSE event (`chunk` frames the bytes into these). */
  private event(data: string, name?: string): void {
    if (this.finished) return;
    if (data.trim() === "[DONE]") {
      if (this.finish !== null) this.complete();
      else this.failWith("server_error", "the model's answer ended before it finished");
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return; // not a chunk: servers interleave odd lines, skipping them is what others do
    }
    if (!isObj(chunk)) return;
    this.begin();
    if (name === "error" || chunk.error !== undefined) {
      const e = chunk.error;
      const message =
        typeof e === "string"
          ? e
          : isObj(e) && typeof e.message === "string"
            ? e.message
            : "the model failed mid-answer";
      this.failWith("server_error", message);
      return;
    }
    if (isObj(chunk.usage)) this.usage = chunk.usage as OaiUsage & Obj;
    this.figures?.chunk(chunk);
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isObj(choice)) return;
    const delta = isObj(choice.delta) ? choice.delta : {};
    const thought = delta.reasoning_content ?? delta.reasoning;
    if (typeof thought === "string" && thought !== "") this.text("reasoning", thought);
    if (typeof delta.content === "string" && delta.content !== "") this.text("text", delta.content);
    if (Array.isArray(delta.tool_calls)) {
      for (const c of delta.tool_calls) if (isObj(c)) this.toolDelta(c);
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.finish = choice.finish_reason;
    }
  }

  private take(): ResponsesEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }

  private emit(type: string, fields: Obj): void {
    this.events.push({ type, sequence_number: this.seq++, ...fields });
  }

  private begin(): void {
    if (this.started) return;
    this.started = true;
    const response = responseObject(this.shape, "in_progress", [], null);
    this.emit("response.created", { response });
    this.emit("response.in_progress", { response });
  }

  private text(kind: Open["kind"], text: string): void {
    let o = this.open;
    if (o?.kind !== kind) {
      this.closeOpen();
      o = {
        kind,
        index: this.output.length,
        id: this.ids(kind === "text" ? "msg" : "rs"),
        text: "",
      };
      this.open = o;
      const base = { item_id: o.id, output_index: o.index };
      if (kind === "text") {
        const item = {
          id: o.id,
          type: "message",
          status: "in_progress",
          content: [],
          role: "assistant",
        };
        this.output.push(item);
        this.emit("response.output_item.added", { output_index: o.index, item });
        this.emit("response.content_part.added", { ...base, content_index: 0, part: part("") });
      } else {
        const item = { id: o.id, type: "reasoning", summary: [] };
        this.output.push(item);
        this.emit("response.output_item.added", { output_index: o.index, item });
        this.emit("response.reasoning_summary_part.added", {
          ...base,
          summary_index: 0,
          part: { type: "summary_text", text: "" },
        });
      }
    }
    o.text += text;
    if (kind === "text") {
      this.emit("response.output_text.delta", {
        item_id: o.id,
        output_index: o.index,
        content_index: 0,
        delta: text,
        logprobs: [],
      });
    } else {
      this.emit("response.reasoning_summary_text.delta", {
        item_id: o.id,
        output_index: o.index,
        summary_index: 0,
        delta: text,
      });
    }
  }

  private closeOpen(): void {
    const o = this.open;
    if (!o) return;
    this.open = null;
    const base = { item_id: o.id, output_index: o.index };
    if (o.kind === "text") {
      this.emit("response.output_text.done", {
        ...base,
        content_index: 0,
        text: o.text,
        logprobs: [],
      });
      this.emit("response.content_part.done", { ...base, content_index: 0, part: part(o.text) });
      const item = messageItem(o.text, "completed", o.id);
      this.output[o.index] = item;
      this.emit("response.output_item.done", { output_index: o.index, item });
    } else {
      this.emit("response.reasoning_summary_text.done", {
        ...base,
        summary_index: 0,
        text: o.text,
      });
      this.emit("response.reasoning_summary_part.done", {
        ...base,
        summary_index: 0,
        part: { type: "summary_text", text: o.text },
      });
      const item = reasoningItem(o.text, o.id);
      this.output[o.index] = item;
      this.emit("response.output_item.done", { output_index: o.index, item });
    }
  }

  private toolDelta(c: Obj): void {
    const key = typeof c.index === "number" ? c.index : this.calls.size;
    const f = isObj(c.function) ? c.function : {};
    let call = this.calls.get(key);
    if (!call) {
      call = { index: -1, id: this.ids("fc"), callId: "", name: "", args: "" };
      this.calls.set(key, call);
    }
    if (typeof c.id === "string" && c.id !== "" && call.callId === "") call.callId = c.id;
    if (typeof f.name === "string" && f.name !== "" && call.index === -1) call.name += f.name;
    const args = typeof f.arguments === "string" ? f.arguments : "";
    if (call.index === -1) {
      call.args += args;
      // The item needs its name; arguments that came before it are its first delta.
      if (call.name !== "") this.addCall(call, key);
      return;
    }
    if (args === "") return;
    call.args += args;
    this.emit("response.function_call_arguments.delta", {
      item_id: call.id,
      output_index: call.index,
      delta: args,
    });
  }

  private addCall(call: ToolCall, key: number): void {
    this.closeOpen();
    call.index = this.output.length;
    if (call.callId === "") call.callId = `call_${key}`;
    const ns = this.shape.namespaces?.get(call.name);
    const item = callItem(call.callId, call.name, "", "in_progress", call.id, ns);
    this.output.push(item);
    this.emit("response.output_item.added", { output_index: call.index, item });
    if (call.args !== "") {
      this.emit("response.function_call_arguments.delta", {
        item_id: call.id,
        output_index: call.index,
        delta: call.args,
      });
    }
  }

  /** Closes every open item, in output order. */
  private closeAll(): void {
    this.closeOpen();
    for (const [key, call] of this.calls) {
      if (call.index === -1) this.addCall(call, key);
    }
    const calls = [...this.calls.values()].sort((a, b) => a.index - b.index);
    for (const call of calls) {
      this.emit("response.function_call_arguments.done", {
        item_id: call.id,
        output_index: call.index,
        name: call.name,
        arguments: call.args,
      });
      const ns = this.shape.namespaces?.get(call.name);
      const item = callItem(call.callId, call.name, call.args, "completed", call.id, ns);
      this.output[call.index] = item;
      this.emit("response.output_item.done", { output_index: call.index, item });
    }
  }

  private complete(): void {
    this.begin();
    this.closeAll();
    const ending = this.finish === "length" ? "incomplete" : "completed";
    this.ending = ending;
    this.final = responseObject(this.shape, ending, [...this.output], usageOf(this.usage));
    this.emit(`response.${ending}`, { response: this.final });
  }

  private failWith(code: string, message: string): void {
    this.begin();
    this.ending = "failed";
    this.final = responseObject(this.shape, "failed", [...this.output], usageOf(this.usage), {
      error: { code, message },
    });
    this.emit("response.failed", { response: this.final });
  }
}

function part(text: string): Obj {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}
