/**
 * Responses `tools` / `tool_choice` → chat. Function tools are flat in the Responses API
 * (`{type:"function", name, description, parameters, strict}`); a `namespace` tool groups
 * function tools (Codex CLI sends one on every request) and its members are offered as they
 * are. Built-in tools no local model can run (`web_search`, `file_search`, computer use, MCP,
 * …) are left out and reported through `dropped`, never refused: Codex CLI always sends one.
 */
import type { OaiTool, OaiToolChoice } from "../../chat/wire.ts";
import { check, FunctionChoice, FunctionTool, NamespaceTool } from "../wire.ts";

type Obj = Record<string, unknown>;

function fnTool(raw: Obj, field: string): OaiTool {
  const t = check<{ name: string; parameters?: Obj | null; description?: unknown }>(
    FunctionTool,
    raw,
    field,
  );
  const fn: OaiTool["function"] = {
    name: t.name,
    parameters: t.parameters ?? { type: "object", properties: {} },
  };
  if (typeof t.description === "string") fn.description = t.description;
  return { type: "function", function: fn };
}

export interface Tools {
  tools: OaiTool[];
  /** The types of built-in tools that were left out. */
  dropped: string[];
  /** Each function offered from inside a `namespace` tool → that namespace's name. */
  namespaces: Map<string, string>;
}

/** The request's `tools`, as its schema checked them (`../wire.ts`): objects. */
export function toTools(v: readonly Obj[] | null | undefined): Tools {
  const out: Tools = { tools: [], dropped: [], namespaces: new Map() };
  if (!v) return out;
  v.forEach((t, i) => {
    const f = `tools[${i}]`;
    if (t.type === "function") out.tools.push(fnTool(t, f));
    else if (t.type === "namespace") {
      const ns = check<{ tools: Obj[] }>(NamespaceTool, t, f);
      ns.tools.forEach((inner, j) => {
        const g = `${f}.tools[${j}]`;
        if (inner.type === "function" || inner.type === undefined) {
          const tool = fnTool(inner, g);
          out.tools.push(tool);
          if (typeof t.name === "string" && !out.namespaces.has(tool.function.name)) {
            out.namespaces.set(tool.function.name, t.name);
          }
        } else out.dropped.push(String(inner.type));
      });
    } else out.dropped.push(typeof t.type === "string" ? t.type : "unknown");
  });
  return out;
}

/**
 * `tool_choice` (a string or an object, as the request's schema checked it): the strings as they
 * are; `{type:"function", name}` in chat's nesting.
 */
export function toToolChoice(v: string | Obj | null | undefined): OaiToolChoice | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v as OaiToolChoice;
  if (v.type === "function") {
    const { name } = check<{ name: string }>(FunctionChoice, v, "tool_choice");
    return { type: "function", function: { name } };
  }
  // `allowed_tools`, a built-in tool type: "auto" is the nearest a chat server understands.
  return "auto";
}
