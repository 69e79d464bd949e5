/**
 * `tools` and `tool_choice` (docs/translation.md §3.3). Anthropic server tools (web search, code
 * execution, …) have no `input_schema` and nothing on a local server can run them, so they are
 * dropped; `tools: []` is never sent (vLLM rejects it); `tool_choice` is only sent when tools
 * remain ("tools are required when tool choice is specified").
 */

import type { Profile } from "../../chat/profile.ts";
import type { OaiChatRequest, OaiTool } from "../../chat/wire.ts";
import { badRequest } from "../../request/body.ts";
import type { WireTool, WireToolChoice } from "../wire.ts";

type ToolFields = Pick<OaiChatRequest, "tools" | "tool_choice" | "parallel_tool_calls">;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function translateTools(
  tools: WireTool[] | undefined,
  choice: WireToolChoice | undefined,
  profile: Profile,
): ToolFields {
  let out: OaiTool[] = [];
  for (const t of tools ?? []) {
    const custom = t.type === undefined || t.type === "custom";
    if (!custom || !isRecord(t.input_schema)) continue;
    const parameters =
      profile === "llamacpp" ? stripGrammarHazards(t.input_schema) : t.input_schema;
    const fn: OaiTool["function"] = { name: t.name, parameters };
    if (typeof t.description === "string" && t.description !== "") fn.description = t.description;
    // cache_control, defer_loading, input_examples, strict, … have no OpenAI meaning.
    out.push({ type: "function", function: fn });
  }
  if (out.length === 0) return {};
  const fields: ToolFields = { tools: out };
  switch (choice?.type) {
    case undefined:
      break;
    case "auto":
      fields.tool_choice = "auto";
      break;
    case "any":
      fields.tool_choice = "required";
      break;
    case "none":
      // Keep the tools: the history may hold tool calls the template must still render.
      fields.tool_choice = "none";
      break;
    case "tool": {
      const name = choice.name;
      if (!name) throw badRequest("tool_choice.name: Field required", "tool_choice");
      if (!out.some((t) => t.function.name === name)) {
        throw badRequest(`tool_choice names tool "${name}", which is not in tools`, "tool_choice");
      }
      if (profile === "llamacpp") {
        // llama.cpp parses only the strings auto/none/required: force a call among one tool.
        out = out.filter((t) => t.function.name === name);
        fields.tools = out;
        fields.tool_choice = "required";
      } else {
        fields.tool_choice = { type: "function", function: { name } };
      }
      break;
    }
    default:
      throw badRequest(
        `tool_choice.type: "${choice?.type}" is not one of auto, any, tool, none`,
        "tool_choice",
      );
  }
  // Anthropic: "the model will output exactly one tool use" (at most one for auto).
  if (choice && choice.disable_parallel_tool_use === true && choice.type !== "none") {
    fields.parallel_tool_calls = false;
  }
  return fields;
}

/** String formats llama.cpp's json-schema-to-grammar knows; others fail or are ignored. */
const GRAMMAR_FORMATS = new Set(["date", "time", "date-time", "uuid"]);
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const SCHEMA_ONE = ["items", "additionalProperties", "not", "contains", "if", "then", "else"];
const SCHEMA_LISTS = ["anyOf", "allOf", "oneOf", "prefixItems"];

/**
 * llama.cpp compiles tool schemas into a GBNF grammar; regex `pattern`s such as `\d` and
 * unknown `format`s fail with "failed to parse grammar" (llama.cpp #21943). Removes them at
 * schema positions only: a *property* named "pattern" (Claude Code's Grep tool) stays.
 */
export function stripGrammarHazards(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "pattern" && typeof value === "string") continue;
    if (key === "format" && typeof value === "string" && !GRAMMAR_FORMATS.has(value)) continue;
    if (SCHEMA_MAPS.includes(key) && isRecord(value)) {
      const map: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(value)) {
        map[name] = isRecord(sub) ? stripGrammarHazards(sub) : sub;
      }
      out[key] = map;
    } else if (SCHEMA_ONE.includes(key) && isRecord(value)) {
      out[key] = stripGrammarHazards(value);
    } else if ((SCHEMA_LISTS.includes(key) || key === "items") && Array.isArray(value)) {
      out[key] = value.map((s) => (isRecord(s) ? stripGrammarHazards(s) : s));
    } else {
      out[key] = value;
    }
  }
  return out;
}
