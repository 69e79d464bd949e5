/**
 * The streaming translator: the upstream's chat stream, as steps (`api/chat/chunk.ts`), in;
 * Responses API events out, as SSE frames
 * (https://platform.openai.com/docs/api-reference/responses-streaming). A pure state machine —
 * no I/O, no timers, no JSON parsing; `api/chat/translated-body.ts` reads and writes for it.
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
 * item at a time (a change of kind closes the open one); each upstream tool call is its own
 * `function_call` item, open until the answer ends, so parallel calls whose argument fragments
 * interleave still stream into the right item. The final Response object is built with the
 * shapes of `response.ts`, so a streamed answer ends in the same object a non-streamed one is.
 */

import { sseComment, sseEvent } from "../../../shared/sse.ts";
import type { ChatDelta, ChatStep } from "../../chat/chunk.ts";
import { type ToolCall, ToolCalls } from "../../chat/tool-calls.ts";
import { type ChatTranslator, failureMessage, type StreamFailure } from "../../chat/translator.ts";
import type { OaiUsage } from "../../chat/wire.ts";
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

/** One Responses event: `type`, `sequence_number`, and the event's own fields. */
export type ResponsesEvent = Obj & { type: string; sequence_number: number };

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

/** A tool call's `function_call` item. */
interface CallItem {
  call: ToolCall;
  /** Its output index once it was added (it needs a name first); -1 until then. */
  index: number;
  id: string;
  callId: string;
}

export type Ending = "completed" | "incomplete" | "failed";

/** The keep-alive: a comment, which every SSE parser drops. */
export const KEEP_ALIVE = sseComment("keep-alive");

export class ResponsesStream implements ChatTranslator {
  private seq = 0;
  /** The frames of the events made since the last call returned. */
  private out = "";
  private readonly ids: (prefix: "msg" | "fc" | "rs") => string;
  private started = false;
  /** Output items by output index, as they stand (in progress until their `done`). */
  private readonly output: OutputItem[] = [];
  private open: Open | null = null;
  private readonly tools = new ToolCalls();
  private readonly items = new Map<ToolCall, CallItem>();
  private finish: string | null = null;
  private usage: (OaiUsage & Obj) | null = null;
  /**
   * Output chunks seen, and those that carried reasoning: llama-server, vLLM and OpenAI send a
   * token a chunk, so these are the counts when the upstream reports none (a cut answer; and
   * llama.cpp's reasoning, which its usage never splits out).
   */
  private readonly counted = { output: 0, reasoning: 0 };
  /** How the response ended; null while it runs. */
  ending: Ending | null = null;
  /** The response ended (`ending` is set): nothing more goes out. */
  finished = false;
  /** The final Response object (completed, incomplete or failed); null while it runs. */
  final: Obj | null = null;
  readonly relaysStatus = true;

  constructor(private readonly shape: StreamShape) {
    this.ids = shape.ids ?? itemId;
  }

  /** The answer called functions (the agent-loop hold). */
  get toolCalls(): boolean {
    return this.tools.size > 0;
  }

  get answered(): boolean {
    return this.ending !== null && this.ending !== "failed";
  }

  /** `response.created` and `response.in_progress`, at once. */
  start(): string {
    this.begin();
    return this.take();
  }

  keepAlive(): string {
    return this.finished ? "" : KEEP_ALIVE;
  }

  step(s: ChatStep): string {
    if (this.finished) return "";
    this.begin();
    if (s.kind === "done") this.finishOrFail();
    else if (s.kind === "error") this.failWith("server_error", s.message);
    else this.delta(s);
    return this.take();
  }

  /**
   * The upstream's body ended. An answer that got its finish reason ends as it said (its
   * `[DONE]` may be missing); one that did not was cut short and fails.
   */
  end(): string {
    if (!this.finished) this.finishOrFail();
    return this.take();
  }

  /** A failure (a cut, a timeout, a refusal after the 200): `response.failed`, unless over. */
  fail(f: StreamFailure): string {
    if (!this.finished) this.failWith("server_error", failureMessage(f));
    return this.take();
  }

  private finishOrFail(): void {
    if (this.finish !== null) this.complete();
    else this.failWith("server_error", "the model's answer ended before it finished");
  }

  private delta(s: ChatDelta): void {
    if (s.usage !== null) this.usage = s.usage as OaiUsage & Obj;
    if (s.reasoning !== "") this.counted.reasoning++;
    if (s.reasoning !== "" || s.text !== "" || s.tools !== null) this.counted.output++;
    if (s.reasoning !== "") this.text("reasoning", s.reasoning);
    if (s.text !== "") this.text("text", s.text);
    if (s.tools !== null) for (const d of s.tools) this.toolDelta(this.tools.add(d));
    if (s.finish !== null) this.finish = s.finish;
  }

  private take(): string {
    const out = this.out;
    this.out = "";
    return out;
  }

  /** One event, framed with its `event:` line, as OpenAI sends them. */
  private emit(type: string, fields: Obj): void {
    const e: ResponsesEvent = { type, sequence_number: this.seq++, ...fields };
    this.out += sseEvent(JSON.stringify(e), type);
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

  private toolDelta(call: ToolCall): void {
    let item = this.items.get(call);
    if (!item) {
      item = { call, index: -1, id: this.ids("fc"), callId: "" };
      this.items.set(call, item);
    }
    // The item needs its name; arguments that came before it are its first delta.
    if (item.index === -1) {
      if (call.name !== null) this.addCall(item);
      return;
    }
    const args = this.tools.added;
    if (args === "") return;
    this.emit("response.function_call_arguments.delta", {
      item_id: item.id,
      output_index: item.index,
      delta: args,
    });
  }

  private addCall(item: CallItem): void {
    this.closeOpen();
    const { call } = item;
    const name = call.name ?? "";
    item.index = this.output.length;
    item.callId = call.id ?? `call_${call.key}`;
    const ns = this.shape.namespaces?.get(name);
    const out = callItem(item.callId, name, "", "in_progress", item.id, ns);
    this.output.push(out);
    this.emit("response.output_item.added", { output_index: item.index, item: out });
    if (call.args !== "") {
      this.emit("response.function_call_arguments.delta", {
        item_id: item.id,
        output_index: item.index,
        delta: call.args,
      });
    }
  }

  /** Closes every open item, in output order. */
  private closeAll(): void {
    this.closeOpen();
    for (const item of this.items.values()) if (item.index === -1) this.addCall(item);
    const items = [...this.items.values()].sort((a, b) => a.index - b.index);
    for (const { call, index, id, callId } of items) {
      const name = call.name ?? "";
      this.emit("response.function_call_arguments.done", {
        item_id: id,
        output_index: index,
        name,
        arguments: call.args,
      });
      const ns = this.shape.namespaces?.get(name);
      const item = callItem(callId, name, call.args, "completed", id, ns);
      this.output[index] = item;
      this.emit("response.output_item.done", { output_index: index, item });
    }
  }

  private complete(): void {
    this.begin();
    this.closeAll();
    const ending = this.finish === "length" ? "incomplete" : "completed";
    this.ending = ending;
    this.finished = true;
    this.final = responseObject(
      this.shape,
      ending,
      [...this.output],
      usageOf(this.usage, this.counted),
    );
    this.emit(`response.${ending}`, { response: this.final });
  }

  private failWith(code: string, message: string): void {
    this.begin();
    this.ending = "failed";
    this.finished = true;
    // What was produced before the failure stays: the items as they stood (the open one with
    // its text so far, `incomplete`), and the usage so far.
    this.final = responseObject(
      this.shape,
      "failed",
      this.soFar(),
      usageOf(this.usage, this.counted),
      { error: { code, message } },
    );
    this.emit("response.failed", { response: this.final });
  }

  /** The output items as they stand: an item still open carries what it has, `incomplete`. */
  private soFar(): OutputItem[] {
    const out = [...this.output];
    const o = this.open;
    if (o) {
      out[o.index] =
        o.kind === "text" ? messageItem(o.text, "incomplete", o.id) : reasoningItem(o.text, o.id);
    }
    for (const { call, index, id, callId } of this.items.values()) {
      if (index < 0 || out[index]?.status !== "in_progress") continue;
      const name = call.name ?? "";
      const ns = this.shape.namespaces?.get(name);
      out[index] = callItem(callId, name, call.args, "incomplete", id, ns);
    }
    return out;
  }
}

function part(text: string): Obj {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}
