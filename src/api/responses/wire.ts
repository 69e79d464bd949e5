/**
 * The Responses request (https://platform.openai.com/docs/api-reference/responses/create) as far
 * as qm checks it. Loose: every object admits unknown fields (clients send `include`,
 * `prompt_cache_key`, `client_metadata`, … and keep adding more), and a field that is null counts
 * as absent. A field that is there but malformed is a 400 whose `param` names it
 * (`input[0].call_id must be a string`). Items, parts and tools are checked by their own schema,
 * chosen by their `type` (`translate/input.ts`, `translate/tools.ts`).
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { checked, type Problem } from "../request/schema.ts";

const open = { additionalProperties: true } as const;

/** Optional, and null counts as absent. */
const maybe = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const str = () => Type.String({ error: "must be a string" });
const obj = (props = {}) => Type.Object(props, { ...open, error: "must be an object" });

const ITEMS = "must be a string or an array of items";

export const ResponsesRequestSchema = Type.Object(
  {
    input: Type.Union([Type.String({ error: ITEMS }), Type.Array(obj(), { error: ITEMS })]),
    instructions: maybe(str()),
    stream: maybe(Type.Boolean({ error: "must be a boolean" })),
    store: maybe(Type.Boolean({ error: "must be a boolean" })),
    previous_response_id: maybe(Type.String({ minLength: 1, error: "must be a response id" })),
    max_output_tokens: maybe(
      Type.Integer({ minimum: 1, error: "must be an integer of at least 1" }),
    ),
    temperature: maybe(
      Type.Number({ minimum: 0, maximum: 2, error: "must be a number from 0 to 2" }),
    ),
    top_p: maybe(Type.Number({ minimum: 0, maximum: 1, error: "must be a number from 0 to 1" })),
    tools: maybe(Type.Array(obj(), { error: "must be an array" })),
    tool_choice: maybe(
      Type.Union(
        [
          Type.Literal("auto"),
          Type.Literal("none"),
          Type.Literal("required"),
          Type.Object({}, open),
        ],
        { error: 'must be "auto", "none", "required" or an object' },
      ),
    ),
    text: maybe(
      Type.Object(
        {
          format: maybe(
            Type.Object(
              {
                type: Type.Union(
                  [Type.Literal("text"), Type.Literal("json_object"), Type.Literal("json_schema")],
                  { error: 'must be "text", "json_object" or "json_schema"' },
                ),
              },
              { ...open, error: "must be an object" },
            ),
          ),
        },
        { ...open, error: "must be an object" },
      ),
    ),
  },
  open,
);

export type ResponsesRequest = Static<typeof ResponsesRequestSchema> & Record<string, unknown>;

/** `text.format` of type `json_schema`. */
export const JsonSchemaFormat = Type.Object({ schema: obj() }, open);

/** Input items, by `type` (`message` when it has a `role`). */
export const MessageItem = Type.Object(
  {
    role: Type.Union(
      [
        Type.Literal("user"),
        Type.Literal("assistant"),
        Type.Literal("system"),
        Type.Literal("developer"),
      ],
      { error: "must be user, assistant, system or developer" },
    ),
  },
  open,
);
export const FunctionCallItem = Type.Object(
  { call_id: str(), name: str(), arguments: str() },
  open,
);
export const FunctionCallOutputItem = Type.Object({ call_id: str() }, open);

/** A message's content: a string or parts; each part by its `type`. */
export const Content = Type.Union([
  Type.String({ error: "must be a string or an array of parts" }),
  Type.Array(obj(), { error: "must be a string or an array of parts" }),
]);
export const TextPart = Type.Object({ text: str() }, open);
export const RefusalPart = Type.Object({ refusal: str() }, open);
export const ImagePart = Type.Object(
  // `file_id` images live in OpenAI's file store, which qm does not have.
  { image_url: Type.String({ minLength: 1, error: "must be a URL or a data: URL" }) },
  open,
);

/** A function tool (flat, as the Responses API has them), and a `namespace` of them. */
export const FunctionTool = Type.Object(
  {
    name: Type.String({ minLength: 1, error: "must be a non-empty string" }),
    parameters: maybe(obj()),
  },
  open,
);
export const NamespaceTool = Type.Object(
  { tools: Type.Array(obj(), { error: "must be an array" }) },
  open,
);

/** `tool_choice` naming one function. */
export const FunctionChoice = Type.Object({ name: str() }, open);

/** The Responses wording: `input[0].call_id must be a string`, `input is required`. */
const say = (p: Problem) => `${p.field} ${p.missing ? "is required" : p.message}`;

/** `value` checked against `schema` (at `field` of the body), or a 400 naming the field. */
export function check<T = Record<string, unknown>>(schema: TSchema, value: unknown, field = ""): T {
  return checked<T>(schema, value, say, field);
}
