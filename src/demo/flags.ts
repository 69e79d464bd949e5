/**
 * Flags of the demo upstream (`qm demo-upstream`). Parsing is pure so it is tested without
 * starting a server; `runDemoUpstream` turns the result into output and exit codes.
 */
export interface DemoOptions {
  /** 0 = any free port (the "listening on" line says which). */
  port: number;
  host: string;
  /** Model name reported by /v1/models and mentioned in the generated text. */
  name: string;
  /** /health answers 503 until this many ms after start, like llama-server loading weights. */
  loadDelayMs: number;
  /** Pause between streamed tokens; 0 = as fast as possible. */
  tokenMs: number;
  /** Completion length in tokens (a request's smaller `max_tokens` wins). */
  tokens: number;
  crashAtStart: boolean;
  /** Exit(1) once a response has produced this many tokens; null = never. */
  crashAfterTokens: number | null;
  ignoreSigterm: boolean;
  hangHealth: boolean;
  /**
   * Chat answers call a tool (src/demo/tools.ts): the one `tool` names, else a shell tool,
   * else the first offered, with arguments valid for its schema; after `toolRounds` tool
   * results since the last user message, a text answer ends the loop.
   */
  toolCalls: boolean;
  /** `--tool NAME`: the tool `--tool-calls` calls when offered. */
  tool?: string;
  /** `--tool-rounds N`: tool results before the answer that ends the loop (default 1). */
  toolRounds?: number;
  /** Exit(1) by itself this many ms after start; null = never. */
  exitAfterMs: number | null;
  /** Every inference request answers this HTTP status with an OpenAI error body. */
  failStatus: number | null;
  // The options below are absent unless given (they feature in the Anthropic tests).
  /** Chat answers first "think" this many tokens, sent as `reasoning_content`. */
  reasoningTokens?: number;
  /** Usage reports this many prompt tokens as read from cache (`prompt_tokens_details`). */
  cachedTokens?: number;
  /** Streams pause this long after the role chunk, before the first token (a long prefill). */
  firstTokenMs?: number;
  /** Context size: `GET /props` reports it, and prompt + max_tokens beyond it answer 400. */
  ctxSize?: number;
  /** `-m PATH`, as llama-server takes it: accepted (and shown in /props), never read. */
  modelPath?: string;
  /** Inference requests are taken and never answered: no headers, ever (a wedged server). */
  hangBeforeHeaders?: true;
  /**
   * Answers go silent after this many tokens, connection open: streams after N token frames,
   * JSON answers after their headers and the first half of the body.
   */
  stallAfterTokens?: number;
  /** Streams end broken instead of with their usual tail (see `BAD_SSE`). */
  badSse?: BadSse;
  /** `GET /metrics` answers llama-server-like Prometheus metrics (else 501, as llama-server). */
  metrics?: true;
  /** Answers are a short Markdown document (a heading, a list, a code block) instead. */
  markdown?: true;
  /** Each inference request prints one line to stdout (a model's log that moves). */
  logRequests?: true;
  /** llama-server's `GET /slots` and `POST /slots/{id}?action=save|restore` (one slot). */
  slots?: true;
  /** Where slot saves go (`--slot-save-path`, a "/" added when missing); else 501 on actions. */
  slotSavePath?: string;
  /**
   * vLLM's sleep API (`--enable-sleep-mode`): `POST /sleep?level=N`, `POST /wake_up`,
   * `GET /is_sleeping`. While asleep inference answers 503.
   */
  sleepMode?: true;
  /** How long `POST /wake_up` takes (ms); default `DEFAULT_WAKE_MS`. */
  wakeMs?: number;
  /** `POST /wake_up` answers 500 and the server stays asleep (a wake that fails). */
  failWake?: true;
  /** Holds this many MiB of GPU memory for the process's life (./vram.ts). */
  vramMb?: number;
  /** The device `vramMb` is held on, among those CUDA_VISIBLE_DEVICES leaves (default 0). */
  vramDevice?: number;
}

/** How long a wake takes unless `--wake-ms` says otherwise. */
export const DEFAULT_WAKE_MS = 50;

/**
 * `--bad-sse KIND`: `no-done` ends cleanly but without `data: [DONE]`; `mid-event` stops in
 * the middle of an event; `not-json` sends a `data:` line that is not JSON, then `[DONE]`.
 */
export const BAD_SSE = ["no-done", "mid-event", "not-json"] as const;
export type BadSse = (typeof BAD_SSE)[number];

export const DEFAULT_DEMO_OPTIONS: DemoOptions = {
  port: 0,
  host: "127.0.0.1",
  name: "demo",
  loadDelayMs: 0,
  tokenMs: 20,
  tokens: 32,
  crashAtStart: false,
  crashAfterTokens: null,
  ignoreSigterm: false,
  hangHealth: false,
  toolCalls: false,
  exitAfterMs: null,
  failStatus: null,
};

export const DEMO_HELP = `Usage: qm demo-upstream [options]

A fake OpenAI-compatible model server for demos, tests and benchmarks.
Routes: GET /health, GET /v1/models, POST /v1/chat/completions, POST /v1/completions,
POST /v1/embeddings, ANY /debug/echo, and llama-server's POST /tokenize, POST /apply-template
and GET /props (with --ctx-size); GET /metrics (with --metrics).

Options:
  --port N                 port to listen on; 0 = any free port (default 0)
  --host HOST              address to bind (default 127.0.0.1)
  --name NAME              model name reported (default "demo")
  --load-delay-ms N        /health answers 503 "loading model" for N ms after start (default 0)
  --token-ms N             pause between streamed tokens in ms; 0 = no pause (default 20)
  --tokens N               completion length in tokens (default 32)
  --tool-calls             chat answers call an offered tool (finish_reason "tool_calls"):
                           a shell tool (Codex CLI's exec_command, Claude Code's Bash, ...)
                           running \`echo hello from NAME\`, else the first tool, with arguments
                           valid for its JSON Schema; after a tool result, a text answer
                           quoting it ends the loop
  --tool NAME              the tool --tool-calls calls when the request offers it
  --tool-rounds N          tool results before the answer that ends the loop (default 1)
  --fail-status N          every inference request answers HTTP N with an OpenAI error
  --reasoning N            chat answers think N tokens first (streamed as reasoning_content)
  --cached-tokens N        usage reports N prompt tokens as cached (prompt_tokens_details)
  --first-token-ms N       streams pause N ms before the first token, as a long prefill does
  -m, --model PATH         model file, as llama-server takes it (accepted, not read)
  --ctx-size N             context size: GET /props reports it; prompt + max_tokens over it
                           answers 400 (like vLLM)
  --hang-before-headers    inference requests are never answered (not even headers)
  --stall-after-tokens N   answers go silent after N tokens, connection open (JSON answers:
                           after the headers and half the body)
  --bad-sse KIND           streams end broken: no-done (no data: [DONE]), mid-event (cut in
                           the middle of an event), not-json (a data: line that is not JSON)
  --metrics                GET /metrics answers Prometheus metrics (llamacpp: counter, gauge
                           and histogram), as llama-server --metrics does
  --markdown               answers are a short Markdown document (heading, list, code)
  --log-requests           print one line to stdout per inference request
  --slots                  GET /slots and POST /slots/0?action=save|restore, as llama-server
                           (one slot; chat usage reports the cached prefix as cached_tokens)
  --slot-save-path DIR     where slot saves go (with --slots)
  --sleep-mode             serve vLLM's sleep API: POST /sleep?level=1|2, POST /wake_up,
                           GET /is_sleeping; while asleep inference answers 503
  --wake-ms N              POST /wake_up takes N ms (default 50; with --sleep-mode)
  --fail-wake              POST /wake_up answers 500 and the server stays asleep
  --vram-mb N              hold N MiB of GPU memory while running, through the NVIDIA
                           driver (libcuda.so.1; exit 1 without it); simulated, for
                           qm demo-smi, when QM_DEMO_VRAM_DIR is set
  --vram-device I          the device to hold it on, among the visible ones (default 0)
  --crash-at-start         print an error to stderr and exit 1 before listening
  --crash-after-tokens N   exit 1 mid-response after N tokens
  --exit-after-ms N        exit 1 by itself N ms after start (a crash of a ready model)
  --ignore-sigterm         ignore SIGTERM; only SIGKILL ends the process
  --hang-health            /health never answers
  -h, --help               show this help

Once listening it prints one line to stdout: listening on http://HOST:PORT
`;

export type DemoFlagsResult =
  | { kind: "run"; options: DemoOptions }
  | { kind: "help" }
  | { kind: "error"; message: string };

type IntKey = "port" | "loadDelayMs" | "tokenMs" | "tokens";
type NullableIntKey = "crashAfterTokens" | "exitAfterMs" | "failStatus";
type BoolKey = "crashAtStart" | "ignoreSigterm" | "hangHealth" | "toolCalls";
type OptionalIntKey =
  | "reasoningTokens"
  | "cachedTokens"
  | "firstTokenMs"
  | "ctxSize"
  | "stallAfterTokens"
  | "wakeMs"
  | "vramMb"
  | "vramDevice"
  | "toolRounds";

const INT_FLAGS: Record<string, IntKey> = {
  "--port": "port",
  "--load-delay-ms": "loadDelayMs",
  "--token-ms": "tokenMs",
  "--tokens": "tokens",
};
const NULLABLE_INT_FLAGS: Record<string, NullableIntKey> = {
  "--crash-after-tokens": "crashAfterTokens",
  "--exit-after-ms": "exitAfterMs",
  "--fail-status": "failStatus",
};
const OPTIONAL_INT_FLAGS: Record<string, OptionalIntKey> = {
  "--reasoning": "reasoningTokens",
  "--cached-tokens": "cachedTokens",
  "--first-token-ms": "firstTokenMs",
  "--ctx-size": "ctxSize",
  "--stall-after-tokens": "stallAfterTokens",
  "--wake-ms": "wakeMs",
  "--vram-mb": "vramMb",
  "--vram-device": "vramDevice",
  "--tool-rounds": "toolRounds",
};
const BOOL_FLAGS: Record<string, BoolKey> = {
  "--crash-at-start": "crashAtStart",
  "--ignore-sigterm": "ignoreSigterm",
  "--hang-health": "hangHealth",
  "--tool-calls": "toolCalls",
};

/** Switches whose option is absent unless given. */
const OPTIONAL_BOOL_FLAGS: Record<
  string,
  "hangBeforeHeaders" | "markdown" | "logRequests" | "slots" | "sleepMode" | "failWake"
> = {
  "--hang-before-headers": "hangBeforeHeaders",
  "--markdown": "markdown",
  "--log-requests": "logRequests",
  "--slots": "slots",
  "--sleep-mode": "sleepMode",
  "--fail-wake": "failWake",
};

export function parseDemoFlags(argv: readonly string[]): DemoFlagsResult {
  const options: DemoOptions = { ...DEFAULT_DEMO_OPTIONS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "-h" || arg === "--help") return { kind: "help" };
    // Both `--port 8080` and `--port=8080`, as most CLIs accept.
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = flag === arg ? undefined : arg.slice(eq + 1);
    const boolKey = BOOL_FLAGS[flag];
    if (boolKey !== undefined) {
      if (inline !== undefined) return { kind: "error", message: `${flag} takes no value` };
      options[boolKey] = true;
      continue;
    }
    const optional = OPTIONAL_BOOL_FLAGS[flag];
    if (optional !== undefined) {
      if (inline !== undefined) return { kind: "error", message: `${flag} takes no value` };
      options[optional] = true;
      continue;
    }
    if (flag === "--metrics") {
      if (inline !== undefined) return { kind: "error", message: `${flag} takes no value` };
      options.metrics = true;
      continue;
    }
    if (flag === "--bad-sse") {
      const kind = inline ?? argv[++i];
      if (!BAD_SSE.includes(kind as BadSse)) {
        return { kind: "error", message: `--bad-sse needs one of ${BAD_SSE.join(", ")}` };
      }
      options.badSse = kind as BadSse;
      continue;
    }
    if (flag === "--slot-save-path") {
      const dir = inline ?? argv[++i];
      if (!dir) return { kind: "error", message: `${flag} needs a path` };
      options.slotSavePath = dir.endsWith("/") ? dir : `${dir}/`;
      continue;
    }
    if (flag === "--tool") {
      const name = inline ?? argv[++i];
      if (!name) return { kind: "error", message: `${flag} needs a tool name` };
      options.tool = name;
      continue;
    }
    if (flag === "-m" || flag === "--model") {
      const path = inline ?? argv[++i];
      if (!path) return { kind: "error", message: `${flag} needs a path` };
      options.modelPath = path;
      continue;
    }
    const known = flag === "--host" || flag === "--name" || flag in INT_FLAGS;
    if (!known && !(flag in NULLABLE_INT_FLAGS) && !(flag in OPTIONAL_INT_FLAGS)) {
      return { kind: "error", message: `unknown option ${flag}` };
    }
    const value = inline ?? argv[++i];
    if (value === undefined) return { kind: "error", message: `${flag} needs a value` };
    if (flag === "--host" || flag === "--name") {
      if (value === "") return { kind: "error", message: `${flag} must not be empty` };
      options[flag === "--host" ? "host" : "name"] = value;
      continue;
    }
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n)) {
      return { kind: "error", message: `${flag} needs a whole number >= 0, got "${value}"` };
    }
    const intKey = INT_FLAGS[flag];
    const optionalKey = OPTIONAL_INT_FLAGS[flag];
    if (intKey !== undefined) options[intKey] = n;
    else if (optionalKey !== undefined) options[optionalKey] = n;
    else options[NULLABLE_INT_FLAGS[flag] as NullableIntKey] = n;
  }
  if (options.port > 65535) return { kind: "error", message: `--port must be <= 65535` };
  if (options.vramMb === 0) return { kind: "error", message: "--vram-mb must be at least 1" };
  if (options.vramDevice !== undefined && options.vramMb === undefined) {
    return { kind: "error", message: "--vram-device needs --vram-mb" };
  }
  const fail = options.failStatus;
  if (fail !== null && (fail < 400 || fail > 599)) {
    return { kind: "error", message: `--fail-status must be an HTTP error status (400-599)` };
  }
  return { kind: "run", options };
}
