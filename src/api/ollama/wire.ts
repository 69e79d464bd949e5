/**
 * The bodies of Ollama's inference routes (Ollama's docs/api.md) as far as qm checks them.
 * Loose: every object admits unknown fields (Ollama ignores what it does not know, and so do
 * its options), and a field that is null counts as absent. A field that is there but malformed
 * is a 400 in Ollama's envelope naming it (`"messages[0].role" must be "system", …`). `model`
 * (`request.ts` `modelName`) and `keep_alive` (`keep-alive.ts`) are read by their own parsers.
 */
import { type Static, type TProperties, type TSchema, Type } from "@sinclair/typebox";
import { checked, type Problem } from "../request/schema.ts";

const open = { additionalProperties: true } as const;

/** Optional, and null counts as absent. */
const maybe = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const str = () => Type.String({ error: "must be a string" });
const num = () => Type.Number({ error: "must be a number" });
const list = <T extends TSchema>(t: T) => Type.Array(t, { error: "must be a list" });

/** `options` (Ollama's `api.Options`): the ones with a chat meaning are checked. */
const Options = Type.Object(
  {
    temperature: maybe(num()),
    top_p: maybe(num()),
    top_k: maybe(num()),
    min_p: maybe(num()),
    seed: maybe(num()),
    repeat_penalty: maybe(num()),
    presence_penalty: maybe(num()),
    frequency_penalty: maybe(num()),
    num_predict: maybe(
      Type.Integer({ minimum: -2, error: "must be a whole number (-1: no limit)" }),
    ),
    stop: maybe(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        error: "must be a list of strings",
      }),
    ),
    num_ctx: maybe(Type.Integer({ minimum: 1, error: "must be a positive whole number" })),
  },
  { ...open, error: "must be an object" },
);

const Images = Type.Array(Type.String({ minLength: 1, error: "must be a base64 string" }), {
  error: "must be a list of base64 strings",
});

/** A function whose point is its name: a problem anywhere in it is reported at the name. */
const named = <P extends TProperties>(props: P = {} as P) =>
  Type.Object(
    {
      function: Type.Object(
        { name: Type.String({ minLength: 1, error: "must be a string" }), ...props },
        { ...open, error: "must be a string", errorField: "name" },
      ),
    },
    { ...open, error: "must be a string", errorField: "function.name" },
  );

const ToolCall = named({
  arguments: maybe(
    Type.Union([Type.Object({}, open), Type.String()], { error: "must be an object" }),
  ),
});

const Message = Type.Object(
  {
    role: Type.Union(
      [
        Type.Literal("system"),
        Type.Literal("user"),
        Type.Literal("assistant"),
        Type.Literal("tool"),
      ],
      { error: 'must be "system", "user", "assistant" or "tool"' },
    ),
    content: maybe(str()),
    images: maybe(Images),
    thinking: maybe(str()),
    tool_name: maybe(str()),
    tool_call_id: maybe(str()),
    tool_calls: maybe(list(ToolCall)),
  },
  { ...open, error: "must be an object" },
);

/** What `/api/chat` and `/api/generate` share. */
const common = {
  stream: maybe(Type.Boolean({ error: "must be true or false" })),
  options: maybe(Options),
  format: maybe(
    Type.Union([Type.Literal("json"), Type.Literal(""), Type.Object({}, open)], {
      error: 'must be "json" or a JSON schema object',
    }),
  ),
  think: maybe(
    Type.Union(
      [Type.Boolean(), Type.Literal("high"), Type.Literal("medium"), Type.Literal("low")],
      { error: 'must be true, false, "high", "medium" or "low"' },
    ),
  ),
};

export const ChatBody = Type.Object(
  { ...common, messages: maybe(list(Message)), tools: maybe(list(named())) },
  open,
);

export const GenerateBody = Type.Object(
  {
    ...common,
    prompt: maybe(str()),
    system: maybe(str()),
    suffix: maybe(str()),
    images: maybe(Images),
    raw: maybe(Type.Boolean({ error: "must be true or false" })),
  },
  open,
);

export const EmbedBody = Type.Object(
  {
    input: maybe(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        error: "must be a string or a list of strings",
      }),
    ),
    dimensions: maybe(Type.Integer({ minimum: 1, error: "must be a positive whole number" })),
    options: maybe(Type.Object({}, { ...open, error: "must be an object" })),
  },
  open,
);

export const EmbeddingsBody = Type.Object(
  {
    prompt: maybe(str()),
    options: maybe(Type.Object({}, { ...open, error: "must be an object" })),
  },
  open,
);

type Loose<T extends TSchema> = Static<T> & Record<string, unknown>;
export type ChatBody = Loose<typeof ChatBody>;
export type GenerateBody = Loose<typeof GenerateBody>;
export type EmbedBody = Loose<typeof EmbedBody>;
export type EmbeddingsBody = Loose<typeof EmbeddingsBody>;
export type OptionsBody = Static<typeof Options>;
export type MessageBody = Static<typeof Message>;

/** Ollama's wording: `"options.temperature" must be a number`. */
const say = (p: Problem) => `"${p.field}" ${p.missing ? "is required" : p.message}`;

/** `body` checked against `schema`, or a 400 naming its first malformed field. */
export function check<T>(schema: TSchema, body: unknown): T {
  return checked<T>(schema, body, say);
}
