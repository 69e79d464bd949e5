/**
 * How the demo model (`--tool-calls`) takes part in an agent loop: which offered tool it calls
 * (`pickTool`), with what arguments (`toolArguments`: valid for the tool's JSON Schema), and when
 * it stops calling and answers (`loopAnswer`: after `--tool-rounds` tool results). A shell tool
 * runs a harmless `echo`, so a real agent (Codex CLI, Claude Code) completes a turn.
 */
import { isObject } from "./json-schema.ts";
import { exampleOf } from "./schema-example.ts";

/** An offered tool as the demo reads it: its name and its parameters' JSON Schema. */
export interface OfferedTool {
  name: string;
  parameters: unknown;
}

/**
 * Shell tools the default rule prefers, in order: Codex CLI's `exec_command` (and its older
 * `shell`, `shell_command`, `local_shell`), Claude Code's `Bash`, and the usual other names.
 */
export const SHELL_TOOLS = [
  "exec_command",
  "shell",
  "shell_command",
  "local_shell",
  "bash",
  "run_shell_command",
  "run_command",
];

/** Properties a shell tool takes its command line in. */
const COMMAND_FIELDS = ["cmd", "command", "commands", "script"];

/** What every tool call without a schema to follow says (any object is valid there). */
export const EXAMPLE_ARGUMENTS = { location: "Paris", unit: "celsius" };

/** `tools` of a chat request (also the Responses and Anthropic shapes), in order. */
export function offeredTools(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  const out: OfferedTool[] = [];
  for (const t of tools) {
    if (!isObject(t)) continue;
    const fn = isObject(t.function) ? t.function : t;
    if (typeof fn.name !== "string" || fn.name === "") continue;
    out.push({ name: fn.name, parameters: fn.parameters ?? fn.input_schema ?? {} });
  }
  return out;
}

const isShell = (name: string) => SHELL_TOOLS.includes(name.toLowerCase());

/**
 * The tool to call: `steer` (`--tool NAME`) when offered; else the first shell tool, by
 * `SHELL_TOOLS` order; else the first tool. Null when none is offered.
 */
export function pickTool(tools: readonly OfferedTool[], steer?: string): OfferedTool | null {
  if (steer !== undefined) {
    const named =
      tools.find((t) => t.name === steer) ??
      tools.find((t) => t.name.toLowerCase() === steer.toLowerCase());
    if (named) return named;
  }
  for (const shell of SHELL_TOOLS) {
    const found = tools.find((t) => t.name.toLowerCase() === shell);
    if (found) return found;
  }
  return tools[0] ?? null;
}

/**
 * Arguments for a call of `tool`: for a shell tool, its command field set to `echo hello from
 * NAME` (as a string, or as argv when the field is an array); other fields as its schema needs
 * them. A tool with no required field gets the demo's example arguments (`EXAMPLE_ARGUMENTS`)
 * when its schema allows them.
 */
export function toolArguments(tool: OfferedTool, model: string): Record<string, unknown> {
  const schema = tool.parameters;
  const made = exampleOf(schema);
  const args = isObject(made) ? made : {};
  const props = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  if (isShell(tool.name)) {
    const field = COMMAND_FIELDS.find((f) => Object.hasOwn(props, f));
    if (field !== undefined) {
      const sub = props[field];
      const line = `echo hello from ${model}`;
      args[field] = isObject(sub) && sub.type === "array" ? ["echo", `hello from ${model}`] : line;
      return args;
    }
  }
  if (Object.keys(args).length > 0 || !allowsExample(schema)) return args;
  return { ...EXAMPLE_ARGUMENTS };
}

/** A schema that takes any object with a string `location` and `unit` (the example's fields). */
function allowsExample(schema: unknown): boolean {
  if (!isObject(schema)) return true;
  if (schema.type !== undefined && schema.type !== "object") return false;
  const props = isObject(schema.properties) ? schema.properties : {};
  return Object.keys(EXAMPLE_ARGUMENTS).every((k) => {
    const sub = props[k];
    if (sub === undefined) return schema.additionalProperties !== false;
    return isObject(sub) && (sub.type === undefined || sub.type === "string") && !sub.enum;
  });
}

type Msg = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (isObject(p) && typeof p.text === "string" ? p.text : "")).join("");
}

/**
 * The text that ends the loop, or null while it goes on: once the conversation's last message
 * is a tool result and the tool rounds since the last user message have reached `rounds`, the
 * answer quotes that result (its end, where a command's output is).
 */
export function loopAnswer(messages: unknown, rounds: number): string | null {
  if (!Array.isArray(messages)) return null;
  const last = messages.at(-1) as Msg | undefined;
  if (!isObject(last) || last.role !== "tool") return null;
  let done = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Msg;
    if (!isObject(m) || m.role === "user") break;
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) done++;
  }
  if (done < rounds) return null;
  let said = textOf(last.content).replace(/\s+/g, " ").trim();
  if (said.length > 200) said = `…${said.slice(-200)}`;
  return `Done. The tool said: ${said === "" ? "(nothing)" : said}`;
}
