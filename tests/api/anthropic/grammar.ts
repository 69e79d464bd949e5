/**
 * Checks an Anthropic event sequence against the streaming grammar and builds the message it
 * describes, the way the SDKs' MessageStream does — but strictly: where an SDK would silently
 * lose a delta (wrong index, wrong block type, block pushed out of order), this throws.
 */
import type { AEvent } from "./support.ts";
import { types } from "./support.ts";

type Block = Record<string, unknown> & { type: string };

export interface Built {
  message: Record<string, unknown> & { content: Block[]; usage: Record<string, number> };
  /** "stop" after message_stop, "error" after an error event. */
  end: "stop" | "error";
  error?: { type: string; message: string };
  pings: number;
}

export function build(events: AEvent[]): Built {
  types(events);
  let message: Built["message"] | null = null;
  let open: number | null = null;
  const json = new Map<number, string>();
  let pings = 0;
  for (const [i, { data }] of events.entries()) {
    const where = `event ${i} (${data.type})`;
    if (data.type === "ping") {
      pings++;
      continue;
    }
    if (data.type === "error") {
      if (i !== events.length - 1) throw new Error(`${where}: events after error`);
      if (open !== null) throw new Error(`${where}: error while block ${open} is open`);
      return {
        message: message as Built["message"],
        end: "error",
        error: data.error as never,
        pings,
      };
    }
    if (data.type === "message_start") {
      if (message) throw new Error(`${where}: second message_start`);
      message = structuredClone(data.message) as Built["message"];
      if (!message.usage) throw new Error(`${where}: no usage`);
      continue;
    }
    if (!message) throw new Error(`${where}: before message_start`);
    const index = data.index as number;
    switch (data.type) {
      case "content_block_start":
        if (open !== null) throw new Error(`${where}: block ${open} still open`);
        if (index !== message.content.length)
          throw new Error(`${where}: index ${index} out of order`);
        message.content.push(structuredClone(data.content_block) as Block);
        open = index;
        break;
      case "content_block_delta": {
        if (index !== open) throw new Error(`${where}: delta for ${index}, open is ${open}`);
        const block = message.content[index]!;
        const d = data.delta as Record<string, string>;
        const want = {
          text_delta: "text",
          thinking_delta: "thinking",
          signature_delta: "thinking",
          input_json_delta: "tool_use",
        }[d.type!];
        if (want !== block.type) throw new Error(`${where}: ${d.type} into a ${block.type} block`);
        if (d.type === "text_delta") block.text = `${block.text}${d.text}`;
        if (d.type === "thinking_delta") block.thinking = `${block.thinking}${d.thinking}`;
        if (d.type === "signature_delta") block.signature = d.signature;
        if (d.type === "input_json_delta")
          json.set(index, (json.get(index) ?? "") + d.partial_json);
        break;
      }
      case "content_block_stop": {
        if (index !== open) throw new Error(`${where}: stop for ${index}, open is ${open}`);
        const block = message.content[index]!;
        if (block.type === "thinking" && typeof block.signature !== "string") {
          throw new Error(`${where}: thinking block without signature`);
        }
        if (block.type === "tool_use") {
          if (!("input" in block)) throw new Error(`${where}: tool_use without input`);
          block.input = JSON.parse(json.get(index) || "{}");
        }
        open = null;
        break;
      }
      case "message_delta": {
        if (open !== null) throw new Error(`${where}: block ${open} still open`);
        const usage = data.usage as Record<string, number> | undefined;
        if (!usage || typeof usage.output_tokens !== "number")
          throw new Error(`${where}: no usage`);
        Object.assign(message, data.delta);
        Object.assign(message.usage, usage);
        break;
      }
      case "message_stop":
        if (i !== events.length - 1) throw new Error(`${where}: events after message_stop`);
        if (events[i - 1]?.data.type !== "message_delta")
          throw new Error(`${where}: no message_delta before`);
        return { message, end: "stop", pings };
      default:
        throw new Error(`${where}: unknown event`);
    }
  }
  throw new Error("stream ended without message_stop or error");
}
