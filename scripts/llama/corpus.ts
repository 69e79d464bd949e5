/**
 * Anthropic requests whose prompt tokens `count-corpus.ts` counts on a real llama-server, to
 * calibrate `estimatePrompt` (src/api/anthropic/translate/estimate.ts). The shapes are the ones
 * clients send (README.md "Claude Code", docs/translation.md §3): plain and system prompts,
 * tools with real schemas (Claude Code-like), multi-turn, tool_use / tool_result turns, images,
 * thinking; the texts mix prose, code, JSON, digits, identifiers and non-ASCII scripts, which
 * tokenize at very different rates.
 */
import type { CountTokensRequest } from "../../src/api/anthropic/wire.ts";

export interface CorpusEntry {
  name: string;
  request: CountTokensRequest;
}

const M = "tiny";
const user = (content: unknown) => ({ role: "user" as const, content: content as string });
const assistant = (content: unknown) => ({
  role: "assistant" as const,
  content: content as string,
});

const PROSE =
  "The gateway starts each model server on first use, keeps it warm while requests keep " +
  "coming, and stops it after an idle timeout. When two models do not fit in memory at once, " +
  "the least recently used one is evicted, unless a client holds it between two tool calls. ";

const CODE = `export async function readConfig(path: string): Promise<Config> {
  const text = await Bun.file(path).text();
  const raw = parse(text) as Record<string, unknown>;
  if (!raw.models || typeof raw.models !== "object") {
    throw new Error(\`\${path}: [models] is missing\`);
  }
  for (const [id, m] of Object.entries(raw.models)) {
    validate(id, m as ModelInput); // throws on a bad key
  }
  return normalise(raw);
}
`;

const PY = `def fib(n: int) -> list[int]:
    """First n Fibonacci numbers."""
    a, b, out = 0, 1, []
    for _ in range(n):
        out.append(a)
        a, b = b, a + b
    return out

if __name__ == "__main__":
    print(fib(20))
`;

const JSON_DOC = JSON.stringify(
  {
    id: "req_01HZX3K9M2Q7R8S4T5V6W7X8Y9",
    model: "qwen3-coder-30b",
    usage: { input_tokens: 18234, output_tokens: 912, cache_read_input_tokens: 16000 },
    items: [
      { sku: "A-1042", qty: 3, price: 19.99, tags: ["red", "xl"] },
      { sku: "B-2210", qty: 1, price: 249.5, tags: [] },
      { sku: "C-0007", qty: 12, price: 0.35, tags: ["bulk"] },
    ],
    ok: true,
  },
  null,
  2,
);

const LOG = `2026-11-30T14:02:11.482Z INFO  proxy: model=qwen3 status=200 ttfb_ms=183 bytes=48211
2026-11-30T14:02:12.019Z WARN  lease: hold expired after 30000ms (model=llama3, pid=48213)
2026-11-30T14:02:12.020Z ERROR spawn: exit code 137 (SIGKILL) rss=23.4GiB limit=24GiB
0x7ffd3a2c1e40 0x000055d4c1a0b3f2 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`;

const CHINESE =
  "量化模型在本地运行时，显存占用和上下文长度需要权衡。请用中文解释为什么长上下文会让首个词元的延迟变高，并给出三条建议。";
const JAPANESE =
  "このゲートウェイは複数のローカルモデルを一つのAPIで提供します。設定ファイルの書き方を教えてください。";
const RUSSIAN =
  "Объясни, пожалуйста, как работает вытеснение моделей из памяти и что такое аренда модели.";
const EMOJI =
  "Ship it 🚀🚀 — tests green ✅, bench flat 📉, docs done 📝🎉 ¿Listo? Ça marche! naïve café";
/** Scripts a Latin-centred vocabulary splits finely (Llama 3, Phi-3's byte fallback). */
const HINDI =
  "यह गेटवे कई स्थानीय मॉडलों को एक ही एपीआई के पीछे चलाता है। कृपया बताइए कि मेमोरी कम होने पर कौन सा मॉडल पहले बंद होता है।";
const THAI =
  "เกตเวย์นี้เริ่มเซิร์ฟเวอร์โมเดลเมื่อมีการใช้งานครั้งแรก และหยุดเมื่อไม่มีการใช้งานเป็นเวลานาน โปรดอธิบายวิธีตั้งค่า";
const ARABIC =
  "تقوم البوابة بتشغيل خادم النموذج عند أول طلب، وتوقفه بعد فترة من الخمول. كيف أضبط مهلة التفريغ؟";
const KOREAN =
  "이 게이트웨이는 여러 로컬 모델을 하나의 API로 제공합니다. 메모리가 부족하면 어떤 모델이 먼저 내려가나요?";
const GREEK_HEBREW =
  "Η πύλη ξεκινά κάθε μοντέλο κατά την πρώτη χρήση. השער מפעיל כל מודל בשימוש הראשון ועוצר אותו אחר כך.";
const NON_LATIN = [HINDI, THAI, ARABIC, KOREAN, GREEK_HEBREW, CHINESE, JAPANESE, RUSSIAN].join(
  "\n",
);

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Claude Code-like tool definitions (names, prose descriptions, JSON schemas). */
const BASH = {
  name: "Bash",
  description:
    "Executes a given bash command in a persistent shell session with optional timeout, " +
    "ensuring proper handling and security measures. Before executing the command, verify " +
    "that the parent directory exists. Always quote file paths that contain spaces.",
  input_schema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command to execute" },
      timeout: { type: "number", description: "Optional timeout in milliseconds (max 600000)" },
      description: {
        type: "string",
        description: "Clear, concise description of what this command does in 5-10 words",
      },
      run_in_background: { type: "boolean", description: "Run the command in the background" },
    },
    required: ["command"],
    additionalProperties: false,
    $schema: "http://json-schema.org/draft-07/schema#",
  },
};
const READ = {
  name: "Read",
  description:
    "Reads a file from the local filesystem. The file_path parameter must be an absolute " +
    "path. By default, it reads up to 2000 lines starting from the beginning of the file.",
  input_schema: {
    type: "object",
    properties: {
      file_path: { type: "string", description: "The absolute path to the file to read" },
      offset: { type: "number", description: "The line number to start reading from" },
      limit: { type: "number", description: "The number of lines to read" },
    },
    required: ["file_path"],
    additionalProperties: false,
  },
};
const EDIT = {
  name: "Edit",
  description:
    "Performs exact string replacements in files. The edit will FAIL if old_string is not " +
    "unique in the file. Use replace_all to change every instance of old_string.",
  input_schema: {
    type: "object",
    properties: {
      file_path: { type: "string", description: "The absolute path to the file to modify" },
      old_string: { type: "string", description: "The text to replace" },
      new_string: { type: "string", description: "The text to replace it with" },
      replace_all: { type: "boolean", default: false, description: "Replace all occurrences" },
    },
    required: ["file_path", "old_string", "new_string"],
    additionalProperties: false,
  },
};
const GREP = {
  name: "Grep",
  description: "A powerful search tool built on ripgrep. Supports full regex syntax.",
  input_schema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "The regular expression pattern to search for" },
      path: { type: "string", description: "File or directory to search in" },
      glob: { type: "string", description: 'Glob pattern to filter files (e.g. "*.js")' },
      output_mode: {
        type: "string",
        enum: ["content", "files_with_matches", "count"],
        description: "Output mode",
      },
      "-i": { type: "boolean", description: "Case insensitive search" },
      "-n": { type: "boolean", description: "Show line numbers in output" },
      head_limit: { type: "number", description: "Limit output to first N lines/entries" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
};
const TODO = {
  name: "TodoWrite",
  description: "Create and manage a structured task list for the current coding session.",
  input_schema: {
    type: "object",
    properties: {
      todos: {
        type: "array",
        items: {
          type: "object",
          properties: {
            content: { type: "string", minLength: 1 },
            status: { type: "string", enum: ["pending", "in_progress", "completed"] },
            activeForm: { type: "string", minLength: 1 },
          },
          required: ["content", "status", "activeForm"],
          additionalProperties: false,
        },
        description: "The updated todo list",
      },
    },
    required: ["todos"],
    additionalProperties: false,
  },
};
const TINY_TOOL = {
  name: "now",
  description: "Current time.",
  input_schema: { type: "object", properties: {} },
};
const WEATHER = {
  name: "get_weather",
  description: "Get the current weather in a given location",
  input_schema: {
    type: "object",
    properties: {
      location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"] },
    },
    required: ["location"],
  },
};
const ALL_TOOLS = [BASH, READ, EDIT, GREP, TODO, WEATHER];

/** Codex CLI-like tools: long descriptions, nested objects, arrays of objects, enums. */
const CODEX_TOOLS = [
  {
    name: "exec_command",
    description:
      "Runs a command in a PTY, returning output or a session ID for ongoing interaction. " +
      "Use it for builds, tests and searches; prefer `rg` over `grep`. Commands run in the " +
      "workspace sandbox unless escalated permissions are requested with a justification.",
    input_schema: {
      type: "object",
      properties: {
        cmd: { type: "string", description: "Shell command to execute." },
        workdir: { type: "string", description: "Working directory; defaults to the turn cwd." },
        yield_time_ms: {
          type: "number",
          description: "How long to wait (in milliseconds) for output before yielding.",
        },
        max_output_tokens: { type: "number", description: "Maximum number of tokens to return." },
        sandbox_permissions: {
          type: "string",
          enum: ["use_default", "require_escalated"],
          description: "Sandbox permissions for the command.",
        },
        justification: {
          type: "string",
          description: "Only set if sandbox_permissions is require_escalated: why it is needed.",
        },
      },
      required: ["cmd"],
      additionalProperties: false,
    },
  },
  {
    name: "update_plan",
    description:
      "Updates the task plan. Provide an optional explanation and a list of plan items, each " +
      "with a step and status. At most one step can be in_progress at a time.",
    input_schema: {
      type: "object",
      properties: {
        explanation: { type: "string" },
        plan: {
          type: "array",
          description: "The list of steps",
          items: {
            type: "object",
            properties: {
              step: { type: "string" },
              status: {
                type: "string",
                description: "One of: pending, in_progress, completed",
                enum: ["pending", "in_progress", "completed"],
              },
            },
            required: ["step", "status"],
            additionalProperties: false,
          },
        },
      },
      required: ["plan"],
      additionalProperties: false,
    },
  },
  {
    name: "apply_patch",
    description:
      "Use the `apply_patch` tool to edit files. The patch language is a stripped-down, " +
      "file-oriented diff format: *** Begin Patch, then one or more *** Add File, *** Update " +
      "File or *** Delete File sections, each with @@ hunks of context, - and + lines, then " +
      "*** End Patch. File paths must be relative, never absolute.",
    input_schema: {
      type: "object",
      properties: { input: { type: "string", description: "The entire contents of the patch." } },
      required: ["input"],
      additionalProperties: false,
    },
  },
  {
    name: "view_image",
    description: "Attach a local image (by filesystem path) to the conversation context.",
    input_schema: {
      type: "object",
      properties: { path: { type: "string", description: "Local filesystem path to an image." } },
      required: ["path"],
      additionalProperties: false,
    },
  },
];

const SYSTEM_CC = [
  { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.197; cc_entrypoint=cli" },
  {
    type: "text",
    text: "You are Claude Code, Anthropic's official CLI for Claude.",
    cache_control: { type: "ephemeral" },
  },
  {
    type: "text",
    text:
      "You are an interactive CLI tool that helps users with software engineering tasks. " +
      "Use the instructions below and the tools available to you to assist the user.\n\n" +
      "# Tone and style\nBe concise, direct, and to the point. Answer in fewer than 4 lines " +
      "unless asked for detail. Do not add unnecessary preamble or postamble.\n\n" +
      "# Environment\n<env>\nWorking directory: /home/dev/quartermaster\nIs directory a git " +
      "repo: Yes\nPlatform: linux\nToday's date: 2026-11-30\n</env>",
    cache_control: { type: "ephemeral" },
  },
];

const toolTurns = [
  user("Run the tests for the config module and fix what fails."),
  assistant([
    { type: "thinking", thinking: "I should run the config tests first.", signature: "" },
    { type: "text", text: "Running the config tests." },
    {
      type: "tool_use",
      id: "toolu_01A",
      name: "Bash",
      input: { command: "bun test tests/config", description: "Run config tests" },
    },
  ]),
  user([
    {
      type: "tool_result",
      tool_use_id: "toolu_01A",
      content:
        "tests/config/schema.test.ts:\n✗ rejects an unknown key [2.10ms]\n  Expected: 400\n  " +
        "Received: 500\n\n 41 pass\n 1 fail\nRan 42 tests across 6 files. [812.00ms]",
      is_error: true,
    },
  ]),
  assistant([
    {
      type: "tool_use",
      id: "toolu_01B",
      name: "Read",
      input: { file_path: "/home/dev/quartermaster/src/config/schema.ts", limit: 40 },
    },
  ]),
  user([
    { type: "tool_result", tool_use_id: "toolu_01B", content: [{ type: "text", text: CODE }] },
  ]),
  assistant([
    {
      type: "tool_use",
      id: "toolu_01C",
      name: "Grep",
      input: { pattern: "unknown key", path: "src/config", output_mode: "content", "-n": true },
    },
  ]),
  user([
    {
      type: "tool_result",
      tool_use_id: "toolu_01C",
      content: 'src/config/normalise.ts:88:    throw new Error("unknown key " + key);',
    },
    { type: "text", text: "Keep the fix small.", cache_control: { type: "ephemeral" } },
  ]),
];

export const corpus: CorpusEntry[] = [
  { name: "hello", request: { model: M, messages: [user("Hello")] } },
  { name: "one-word-system", request: { model: M, system: "Be brief.", messages: [user("Hi")] } },
  {
    name: "prose",
    request: { model: M, messages: [user(`Summarise this:\n\n${PROSE.repeat(4)}`)] },
  },
  {
    name: "system-prose",
    request: {
      model: M,
      system: "You are a careful technical writer. Answer in plain English.",
      messages: [user(PROSE)],
    },
  },
  {
    name: "claude-code-system",
    request: { model: M, system: SYSTEM_CC, messages: [user([{ type: "text", text: "hi" }])] },
  },
  { name: "code-ts", request: { model: M, messages: [user(`Review:\n\`\`\`ts\n${CODE}\`\`\``)] } },
  { name: "code-py", request: { model: M, messages: [user(`What does this print?\n${PY}`)] } },
  { name: "json", request: { model: M, messages: [user(JSON_DOC)] } },
  { name: "log-hex", request: { model: M, messages: [user(`Why did it die?\n${LOG}`)] } },
  {
    name: "digits",
    request: {
      model: M,
      messages: [user(Array.from({ length: 60 }, (_, i) => (i * 7919) % 100003).join(", "))],
    },
  },
  { name: "chinese", request: { model: M, messages: [user(CHINESE)] } },
  { name: "japanese", request: { model: M, messages: [user(JAPANESE)] } },
  { name: "russian", request: { model: M, messages: [user(RUSSIAN)] } },
  { name: "emoji-accents", request: { model: M, messages: [user(EMOJI)] } },
  {
    name: "multi-turn",
    request: {
      model: M,
      system: "You are a helpful assistant.",
      messages: [
        user("What is a lease?"),
        assistant("A lease keeps a model loaded while a request uses it."),
        user("And a hold?"),
        assistant("A hold keeps it loaded between two tool calls of one agent loop."),
        user("Thanks. One more: what evicts a model?"),
      ],
    },
  },
  {
    name: "many-short-turns",
    request: {
      model: M,
      messages: Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0 ? user(`q${i}`) : assistant(`a${i}`),
      ).concat([user("done?")]),
    },
  },
  { name: "tool-tiny", request: { model: M, tools: [TINY_TOOL], messages: [user("time?")] } },
  {
    name: "tool-weather",
    request: { model: M, tools: [WEATHER], messages: [user("Weather in Paris?")] },
  },
  {
    name: "tool-bash",
    request: { model: M, tools: [BASH], messages: [user("List the files here.")] },
  },
  {
    name: "tools-all",
    request: { model: M, system: SYSTEM_CC, tools: ALL_TOOLS, messages: [user("Fix the bug.")] },
  },
  {
    name: "tools-choice-tool",
    request: {
      model: M,
      tools: ALL_TOOLS,
      tool_choice: { type: "tool", name: "get_weather" },
      messages: [user("Weather in Oslo?")],
    },
  },
  {
    name: "tool-turns",
    request: { model: M, system: SYSTEM_CC, tools: ALL_TOOLS, messages: toolTurns },
  },
  {
    name: "tool-turns-no-tools",
    request: { model: M, messages: toolTurns },
  },
  {
    // Llama 3.1's template refuses two calls in one turn ("only supports single tool-calls").
    name: "parallel-tool-calls",
    request: {
      model: M,
      tools: [READ, GREP],
      messages: [
        user("Where is the unknown-key error raised?"),
        assistant([
          { type: "tool_use", id: "toolu_P1", name: "Grep", input: { pattern: "unknown key" } },
          { type: "tool_use", id: "toolu_P2", name: "Read", input: { file_path: "/src/a.ts" } },
        ]),
        user([
          { type: "tool_result", tool_use_id: "toolu_P1", content: "src/a.ts:3: unknown key" },
          { type: "tool_result", tool_use_id: "toolu_P2", content: CODE },
        ]),
      ],
    },
  },
  {
    name: "orphan-tool-result",
    request: {
      model: M,
      messages: [
        user([
          { type: "tool_result", tool_use_id: "toolu_X", content: "42" },
          { type: "text", text: "What was that?" },
        ]),
      ],
    },
  },
  {
    name: "thinking-enabled",
    request: {
      model: M,
      thinking: { type: "enabled", budget_tokens: 8000 },
      messages: [user("Prove that the square root of 2 is irrational.")],
    },
  },
  {
    name: "thinking-disabled",
    request: {
      model: M,
      thinking: { type: "disabled" },
      messages: [user("Prove that the square root of 2 is irrational.")],
    },
  },
  {
    name: "thinking-history",
    request: {
      model: M,
      thinking: { type: "adaptive" },
      output_config: { effort: "high" },
      messages: [
        user("Is 1001 prime?"),
        assistant([
          {
            type: "thinking",
            thinking: "1001 = 7 × 11 × 13, so it is not prime. Let me double check: 7×143=1001.",
            signature: "",
          },
          { type: "text", text: "No: 1001 = 7 × 11 × 13." },
        ]),
        user("And 1009?"),
      ],
    },
  },
  {
    name: "image",
    request: {
      model: M,
      messages: [
        user([
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } },
          { type: "text", text: "What is in this picture?" },
        ]),
      ],
    },
  },
  {
    name: "image-two-in-tool-result",
    request: {
      model: M,
      tools: [READ],
      messages: [
        user("Look at the screenshots."),
        assistant([
          { type: "tool_use", id: "toolu_I", name: "Read", input: { file_path: "/tmp/a.png" } },
        ]),
        user([
          {
            type: "tool_result",
            tool_use_id: "toolu_I",
            content: [
              { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } },
              { type: "text", text: "a.png" },
            ],
          },
          { type: "image", source: { type: "url", url: "https://example.com/b.png" } },
        ]),
      ],
    },
  },
  { name: "non-latin", request: { model: M, messages: [user(NON_LATIN)] } },
  { name: "hindi-thai", request: { model: M, system: HINDI, messages: [user(THAI)] } },
  {
    name: "tools-codex",
    request: { model: M, tools: CODEX_TOOLS, messages: [user("Run the tests and fix them.")] },
  },
  {
    name: "tools-codex-non-latin-result",
    request: {
      model: M,
      tools: CODEX_TOOLS,
      messages: [
        user(KOREAN),
        assistant([
          { type: "tool_use", id: "toolu_K", name: "exec_command", input: { cmd: "cat 설명.txt" } },
        ]),
        user([{ type: "tool_result", tool_use_id: "toolu_K", content: `${ARABIC}\n${HINDI}` }]),
      ],
    },
  },
  {
    name: "long-mixed",
    request: {
      model: M,
      system: SYSTEM_CC,
      tools: ALL_TOOLS,
      messages: [
        user(`${PROSE.repeat(10)}\n${CODE}\n${PY}\n${JSON_DOC}\n${LOG}`),
        assistant("I read it all. What next?"),
        user(`${CHINESE}\n${EMOJI}`),
      ],
    },
  },
];
