/**
 * The demo upstream as an agent's model, over HTTP (in-process, port 0): a tool call valid for
 * the offered tool, the text answer after its result, and usage that counts the prompt as the
 * demo's own `/apply-template` + `/tokenize` do.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { DEFAULT_DEMO_OPTIONS, type DemoOptions } from "../../src/demo/flags.ts";
import { schemaErrors } from "../../src/demo/json-schema.ts";
import { type DemoServer, startDemoServer } from "../../src/demo/server.ts";
import claudeCode from "./fixtures/claude-code-2.1.197-tools.json";
import codex from "./fixtures/codex-0.171-tools.json";
import { chunks, readSse } from "./sse.ts";

const servers: DemoServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

function demo(over: Partial<DemoOptions> = {}): DemoServer {
  const s = startDemoServer(
    { ...DEFAULT_DEMO_OPTIONS, name: "coder", tokenMs: 0, toolCalls: true, ...over },
    { crash: () => {} },
  );
  servers.push(s);
  return s;
}

async function post(s: DemoServer, path: string, body: unknown): Promise<Response> {
  return fetch(s.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

interface Call {
  id: string;
  function: { name: string; arguments: string };
}
interface Answer {
  choices: { message: { content: string | null; tool_calls?: Call[] }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number };
}

const ask = (s: DemoServer, body: Record<string, unknown>) =>
  post(s, "/v1/chat/completions", body).then((r) => r.json() as Promise<Answer>);

const user = { role: "user", content: "Please run a shell command." };

describe("--tool-calls in an agent loop", () => {
  test("Codex CLI's tools: exec_command with a valid echo; its result gets the answer that ends the loop", async () => {
    const s = demo();
    const first = await ask(s, { model: "m", messages: [user], tools: codex });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const call = choice.message.tool_calls![0]!;
    expect(call.function.name).toBe("exec_command");
    const args = JSON.parse(call.function.arguments);
    expect(args).toEqual({ cmd: "echo hello from coder" });
    expect(schemaErrors(codex[0]!.function.parameters, args)).toEqual([]);
    expect(choice.message.content).toBe("Let me call exec_command for that.");

    const second = await ask(s, {
      model: "m",
      tools: codex,
      messages: [
        user,
        { role: "assistant", content: null, tool_calls: [{ ...call, type: "function" }] },
        { role: "tool", tool_call_id: call.id, content: "Output:\nhello from coder\n" },
      ],
    });
    expect(second.choices[0]).toMatchObject({
      finish_reason: "stop",
      message: { content: "Done. The tool said: Output: hello from coder" },
    });
    expect(second.choices[0]!.message.tool_calls).toBeUndefined();
    expect(second.usage.completion_tokens).toBe(8); // one token a word
  });

  test("streamed: Claude Code's Bash, arguments in fragments that join into valid JSON", async () => {
    const res = await post(demo(), "/v1/chat/completions", {
      model: "m",
      stream: true,
      messages: [user],
      tools: claudeCode,
    });
    const deltas = chunks(await readSse(res)).flatMap(
      (c) => (c.choices as { delta: { tool_calls?: Call[] } }[])[0]?.delta.tool_calls ?? [],
    );
    expect(deltas[0]!.function.name).toBe("Bash");
    const args = JSON.parse(deltas.map((d) => d.function.arguments).join(""));
    expect(args).toEqual({ command: "echo hello from coder" });
    const bash = claudeCode.find((t) => t.function.name === "Bash")!;
    expect(schemaErrors(bash.function.parameters, args)).toEqual([]);
  });

  test("--tool NAME steers the call; --tool-rounds 2 calls again after the first result", async () => {
    const s = demo({ tool: "TaskCreate", toolRounds: 2 });
    const first = (await ask(s, { model: "m", messages: [user], tools: claudeCode })).choices[0]!;
    const call = first.message.tool_calls![0]!;
    expect(call.function.name).toBe("TaskCreate");
    const task = claudeCode.find((t) => t.function.name === "TaskCreate")!;
    expect(schemaErrors(task.function.parameters, JSON.parse(call.function.arguments))).toEqual([]);
    const turn = [
      { role: "assistant", content: null, tool_calls: [{ ...call, type: "function" }] },
      { role: "tool", tool_call_id: call.id, content: "created" },
    ];
    const again = await ask(s, { model: "m", messages: [user, ...turn], tools: claudeCode });
    expect(again.choices[0]!.finish_reason).toBe("tool_calls");
    const done = await ask(s, {
      model: "m",
      messages: [user, ...turn, ...turn],
      tools: claudeCode,
    });
    expect(done.choices[0]!.message.content).toBe("Done. The tool said: created");
  });

  test("no tools offered: a plain answer, no call", async () => {
    const answer = await ask(demo(), { model: "m", messages: [user] });
    expect(answer.choices[0]!.finish_reason).toBe("stop");
    expect(answer.choices[0]!.message.tool_calls).toBeUndefined();
  });
});

describe("usage.prompt_tokens", () => {
  test("equals what the demo's /apply-template and /tokenize count for the same messages", async () => {
    const s = demo({ toolCalls: false, ctxSize: 65536 });
    const cases = [
      { messages: [user] },
      { messages: [{ role: "system", content: "Be brief. ".repeat(40) }, user], tools: codex },
      {
        messages: [
          user,
          { role: "assistant", content: "", tool_calls: [{ id: "c", type: "function" }] },
          { role: "tool", tool_call_id: "c", content: [{ type: "text", text: "ok" }] },
        ],
        tools: claudeCode,
      },
    ];
    for (const body of cases) {
      const { prompt } = (await (await post(s, "/apply-template", body)).json()) as {
        prompt: string;
      };
      const { tokens } = (await (await post(s, "/tokenize", { content: prompt })).json()) as {
        tokens: number[];
      };
      const whole = await ask(s, { model: "m", ...body });
      expect(whole.usage.prompt_tokens).toBe(tokens.length);
      const streamed = chunks(
        await readSse(
          await post(s, "/v1/chat/completions", {
            model: "m",
            ...body,
            stream: true,
            stream_options: { include_usage: true },
          }),
        ),
      ).at(-1) as { usage: { prompt_tokens: number } };
      expect(streamed.usage.prompt_tokens).toBe(tokens.length);
    }
  });
});
