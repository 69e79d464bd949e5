/**
 * Wire shapes of the Anthropic Messages API (https://docs.anthropic.com/en/api/messages) as
 * far as qm checks them at the edge. The schemas are deliberately loose: every object admits
 * unknown keys and content blocks are only required to carry a string `type`, because clients
 * (Claude Code, SDK 1.x) keep adding fields and block types, and the translator drops what it
 * does not know instead of rejecting the request. Block-level checks live in the translator.
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/value";
import { checkerOf } from "../request/schema.ts";

const open = { additionalProperties: true } as const;

const Block = Type.Object({ type: Type.String() }, open);
const Content = Type.Union([Type.String(), Type.Array(Block)]);

const Message = Type.Object(
  {
    // SDK 1.x allows `system` turns inside `messages` (SystemMessageParam).
    role: Type.Union([Type.Literal("user"), Type.Literal("assistant"), Type.Literal("system")]),
    content: Content,
  },
  open,
);

const Tool = Type.Object(
  {
    name: Type.String(),
    // Absent or "custom" for client tools; a dated name (`web_search_20250305`) for server tools.
    type: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    input_schema: Type.Optional(Type.Unknown()),
  },
  open,
);

const Format = Type.Object({ type: Type.String(), schema: Type.Optional(Type.Unknown()) }, open);

const ToolChoice = Type.Object(
  {
    type: Type.String(),
    name: Type.Optional(Type.String()),
    disable_parallel_tool_use: Type.Optional(Type.Boolean()),
  },
  open,
);

const Thinking = Type.Object(
  { type: Type.String(), budget_tokens: Type.Optional(Type.Integer({ minimum: 0 })) },
  open,
);

const OutputConfig = Type.Object(
  {
    effort: Type.Optional(Type.String()),
    format: Type.Optional(Format),
  },
  open,
);

const common = {
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Message),
  system: Type.Optional(Content),
  tools: Type.Optional(Type.Array(Tool)),
  tool_choice: Type.Optional(ToolChoice),
  thinking: Type.Optional(Thinking),
  output_config: Type.Optional(OutputConfig),
  output_format: Type.Optional(Format),
};

export const MessagesRequestSchema = Type.Object(
  {
    ...common,
    max_tokens: Type.Integer({ minimum: 1 }),
    // Bounded: qm matches them against every piece of text (stop-match.ts).
    stop_sequences: Type.Optional(Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 64 })),
    stream: Type.Optional(Type.Boolean()),
    temperature: Type.Optional(Type.Number()),
    top_p: Type.Optional(Type.Number()),
    top_k: Type.Optional(Type.Integer()),
  },
  open,
);

/** `POST /v1/messages/count_tokens`: the same shape without `max_tokens` and sampling. */
export const CountTokensRequestSchema = Type.Object(common, open);

export type MessagesRequest = Static<typeof MessagesRequestSchema>;
export type CountTokensRequest = Static<typeof CountTokensRequestSchema>;
export type WireMessage = Static<typeof Message>;
export type WireBlock = Static<typeof Block>;
export type WireContent = Static<typeof Content>;
export type WireTool = Static<typeof Tool>;
export type WireToolChoice = Static<typeof ToolChoice>;

/**
 * Checks `value` against `schema`; returns null or a message in Anthropic's own style
 * (`max_tokens: Field required`, paths dotted as the API reports them).
 */
export function checkWire(schema: TSchema, value: unknown): string | null {
  const check = checkerOf(schema);
  if (check.Check(value)) return null;
  const first = check.Errors(value).First();
  if (!first) return "invalid request body";
  const path = first.path.split("/").filter(Boolean).join(".") || "body";
  if (first.type === ValueErrorType.ObjectRequiredProperty) return `${path}: Field required`;
  return `${path}: ${first.message}`;
}

/** A response `Message` (non-streaming) and the pieces streaming events carry. */
export type StopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "pause_turn"
  | "refusal";

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type ResponseBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export interface ResponseMessage {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ResponseBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: Usage;
}
