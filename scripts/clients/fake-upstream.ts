/**
 * A scripted OpenAI chat-completions server for client checks (`scripts/clients/codex.ts`):
 * `bun scripts/clients/fake-upstream.ts --port N [--log FILE]`.
 *
 * - A conversation whose last message is a tool result gets a text answer quoting it.
 * - A user turn that says "run" while the request offers `exec_command` (Codex CLI's shell
 *   tool) gets a call of it, running `echo qm-codex-ok`.
 * - Anything else gets a short text answer.
 * Every answer starts with `reasoning_content`. Streamed (with a usage chunk) or whole, as asked. Each request body is appended to `--log`
 * as one JSON line.
 */
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { port: { type: "string" }, log: { type: "string" } },
});
const port = Number(values.port ?? 0);

type Obj = Record<string, unknown>;

interface Answer {
  text: string | null;
  call: { name: string; arguments: string } | null;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
}

/** The scripted answer to a chat request. */
export function answerFor(body: Obj): Answer {
  const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
  const last = messages.at(-1);
  if (last?.role === "tool") {
    const out = textOf(last.content).trim();
    return { text: `The command printed: ${out.slice(0, 200)}`, call: null };
  }
  const user = [...messages].reverse().find((m) => m.role === "user");
  const tools = Array.isArray(body.tools) ? (body.tools as Obj[]) : [];
  const shell = tools.some((t) => (t.function as Obj | undefined)?.name === "exec_command");
  if (shell && /\brun\b/i.test(textOf(user?.content))) {
    return {
      text: null,
      call: { name: "exec_command", arguments: JSON.stringify({ cmd: "echo qm-codex-ok" }) },
    };
  }
  return { text: "Hello from the fake upstream.", call: null };
}

const usage = { prompt_tokens: 40, completion_tokens: 8, total_tokens: 48 };

function chunk(delta: Obj, finish: string | null = null): string {
  const c = {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: "fake",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(c)}\n\n`;
}

/** Every answer starts with a thought, as a reasoning model's does (`reasoning_content`). */
const THOUGHT = ["Working out ", "what to do."];

function stream(a: Answer): string {
  let s = chunk({ role: "assistant", content: null });
  for (const t of THOUGHT) s += chunk({ reasoning_content: t });
  if (a.text !== null) {
    for (const word of a.text.split(/(?<= )/)) s += chunk({ content: word });
  }
  if (a.call) {
    const args = a.call.arguments;
    s += chunk({
      tool_calls: [
        {
          index: 0,
          id: "call_fake1",
          type: "function",
          function: { name: a.call.name, arguments: "" },
        },
      ],
    });
    for (let i = 0; i < args.length; i += 8) {
      s += chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 8) } }] });
    }
  }
  s += chunk({}, a.call ? "tool_calls" : "stop");
  s += `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", choices: [], usage })}\n\n`;
  return `${s}data: [DONE]\n\n`;
}

function whole(a: Answer): Obj {
  const message: Obj = { role: "assistant", content: a.text, reasoning_content: THOUGHT.join("") };
  if (a.call) {
    message.tool_calls = [{ id: "call_fake1", type: "function", function: a.call }];
  }
  return {
    id: "chatcmpl-fake",
    object: "chat.completion",
    choices: [{ index: 0, message, finish_reason: a.call ? "tool_calls" : "stop" }],
    usage,
  };
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/health") return Response.json({ status: "ok" });
    if (path === "/v1/models") return Response.json({ object: "list", data: [{ id: "fake" }] });
    if (path !== "/v1/chat/completions" || req.method !== "POST") {
      return Response.json({ error: { message: `no route ${path}` } }, { status: 404 });
    }
    const body = (await req.json()) as Obj;
    if (values.log) appendFileSync(values.log, `${JSON.stringify(body)}\n`);
    const a = answerFor(body);
    if (body.stream === true) {
      return new Response(stream(a), { headers: { "content-type": "text/event-stream" } });
    }
    return Response.json(whole(a));
  },
});
console.log(`fake upstream on ${server.port}`);
