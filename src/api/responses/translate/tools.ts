/**
 * Responses `tools` / `tool_choice` → chat. Function tools are flat in the Responses API
 * (`{type:"function", name, description, parameters, strict}`); a `namespace` tool groups
 * function tools (Codex CLI sends one on every request) and its members are offered as they
 * are. Built-in tools no local model can run (`web_search`, `file_search`, computer use, MCP,
 * …) are left out and reported through `dropped`, never refused: Codex CLI always sends one.
 */
import type { OaiTool, OaiToolChoice } from "../../chat/wire.ts";
import { badRequest } from "../../request/body.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function fnTool(t: Obj, field: string): OaiTool {
  if (typeof t.name !== "string" || t.name === "") {
    throw badRequest(`${field}.name must be a non-empty string`, `${field}.name`);
  }
  const params = t.parameters ?? { type: "object", properties: {} };
  if (!isObj(params))
    throw badRequest(`${field}.parameters must be an object`, `${field}.parameters`);
  const fn: OaiTool["function"] = { name: t.name, parameters: params };
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

export function toTools(v: unknown): Tools {
  const out: Tools = { tools: [], dropped: [], namespaces: new Map() };
  if (v === undefined || v === null) return out;
  if (!Array.isArray(v)) throw badRequest("tools must be an array", "tools");
  v.forEach((t, i) => {
    const f = `tools[${i}]`;
    if (!isObj(t)) throw badRequest(`${f} must be an object`, f);
    if (t.type === "function") out.tools.push(fnTool(t, f));
    else if (t.type === "namespace") {
      if (!Array.isArray(t.tools)) throw badRequest(`${f}.tools must be an array`, `${f}.tools`);
      t.tools.forEach((inner, j) => {
        const g = `${f}.tools[${j}]`;
        if (!isObj(inner)) throw badRequest(`${g} must be an object`, g);
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

/** `tool_choice`: the strings as they are; `{type:"function", name}` in chat's nesting. */
export function toToolChoice(v: unknown): OaiToolChoice | undefined {
  if (v === undefined || v === null) return undefined;
  if (v === "auto" || v === "none" || v === "required") return v;
  if (isObj(v) && v.type === "function") {
    if (typeof v.name !== "string")
      throw badRequest("tool_choice.name must be a string", "tool_choice.name");
    return { type: "function", function: { name: v.name } };
  }
  // `allowed_tools`, a built-in tool type: "auto" is the nearest a chat server understands.
  if (isObj(v)) return "auto";
  throw badRequest('tool_choice must be "auto", "none", "required" or an object', "tool_choice");
}
