/**
 * What a model can do, as Ollama's `/api/show` says it (`capabilities`): clients decide from it
 * whether a model chats, embeds, thinks or sees (Open WebUI lists embedding models apart,
 * llm-ollama refuses `-o think true` without `thinking`). Found, first that answers:
 *
 * 1. the config's `capabilities`, as written;
 * 2. the running server: llama-server's `GET /props` (`chat_template_caps`, else the chat
 *    template's text, for tools and thinking; `modalities.vision`), read once per process
 *    (its pid) with a short deadline and a bounded read;
 * 3. the GGUF file the command loads (`-m`): `tokenizer.chat_template`, an embedding
 *    architecture or a `pooling_type`;
 * 4. the command alone: `["completion", "tools"]`, without `tools` where the command turns
 *    tool calls off (llama-server's `--no-jinja`; vLLM without `--enable-auto-tool-choice`,
 *    which refuses tools), with `thinking` for vLLM's `--reasoning-parser`. Tools are claimed
 *    unless known absent: a client that trusts the list refuses an agent its tools, while a
 *    server that ignores the tools it is sent merely answers in text.
 *
 * Whatever the source, the command's own flags decide embedding (`--embedding`, vLLM's
 * `--task embed`) and vision (`--mmproj`), and an embedding model never claims completion.
 * Nothing here is ever shown to a client but the list itself.
 */
import type { Capability, ModelConfig } from "../../config/types.ts";
import { isLlamaServer, isVllm, modelPath } from "../../config/variant.ts";
import type { GgufRead, GgufValue } from "../../gpu/gguf/index.ts";
import type { Fetch } from "../../shared/fetch.ts";
import { readAtMost } from "../../shared/read-at-most.ts";
import { realTimers, setTimeoutSignal, type Timers } from "../../shared/timer.ts";

/** How long `/props` may take, its answer read included: `/api/show` waits for it. */
export const PROPS_DEADLINE_MS = 2000;
/** llama-server's `/props` carries the chat template (tens of KB); more is not a props answer. */
export const PROPS_MAX_BYTES = 4 * 1024 * 1024;

/** What a source found out; a field left out is not known from it. */
export interface Found {
  tools?: boolean;
  thinking?: boolean;
  vision?: boolean;
  embedding?: boolean;
}

/** Templates that render thinking (Qwen3's switch, DeepSeek-R1's tags, gpt-oss, Gemma 4). */
const THINKING = /enable_thinking|<think>|reasoning_content|thinking/;
const TOOLS = /\btools\b/;

/** GGUF architectures of embedding models (llama.cpp's encoder-only ones). */
const EMBEDDING_ARCHS = new Set([
  "bert",
  "nomic-bert",
  "nomic-bert-moe",
  "jina-bert-v2",
  "jina-bert-v3",
  "modern-bert",
  "neo-bert",
  "eurobert",
  "t5encoder",
  "gemma-embedding",
]);

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** What a chat template's text says. */
export function fromTemplate(template: string): Found {
  return { tools: TOOLS.test(template), thinking: THINKING.test(template) };
}

/** What llama-server's `GET /props` says. */
export function fromProps(props: Json): Found {
  const found: Found = {};
  const template = typeof props.chat_template === "string" ? props.chat_template : "";
  if (template !== "") Object.assign(found, fromTemplate(template));
  const caps = props.chat_template_caps;
  if (isObj(caps) && typeof caps.supports_tools === "boolean") {
    found.tools = caps.supports_tools || caps.supports_tool_calls === true;
  }
  if (typeof props.chat_template_tool_use === "string" && props.chat_template_tool_use !== "") {
    found.tools = true;
  }
  const modalities = props.modalities;
  if (isObj(modalities) && typeof modalities.vision === "boolean") {
    found.vision = modalities.vision;
  }
  return found;
}

/** What a GGUF file's metadata says. */
export function fromGguf(metadata: ReadonlyMap<string, GgufValue>): Found {
  const found: Found = {};
  const template = metadata.get("tokenizer.chat_template");
  if (typeof template === "string" && template !== "") Object.assign(found, fromTemplate(template));
  const arch = metadata.get("general.architecture");
  const pooling = typeof arch === "string" ? metadata.get(`${arch}.pooling_type`) : undefined;
  // pooling_type 0 is "none": a model that generates.
  if ((typeof arch === "string" && EMBEDDING_ARCHS.has(arch)) || (pooling ?? 0) !== 0) {
    found.embedding = true;
  }
  return found;
}

const has = (argv: readonly string[], ...flags: string[]) =>
  argv.some((a) => flags.some((f) => a === f || a.startsWith(`${f}=`)));

/** The value of `flag` (`--flag V` or `--flag=V`), or null. */
function flagValue(argv: readonly string[], flag: string): string | null {
  const i = argv.indexOf(flag);
  if (i >= 0) return argv[i + 1] ?? null;
  const joined = argv.find((a) => a.startsWith(`${flag}=`));
  return joined === undefined ? null : joined.slice(flag.length + 1);
}

/** What the command's flags say (they are read here, never shown). */
export function fromCommand(argv: readonly string[]): Found {
  const found: Found = {};
  if (isLlamaServer(argv)) {
    found.tools = !has(argv, "--no-jinja");
    if (has(argv, "--embedding", "--embeddings")) found.embedding = true;
    if (has(argv, "--mmproj", "-mm", "--mmproj-url", "-mmu")) found.vision = true;
  } else if (isVllm(argv)) {
    found.tools = has(argv, "--enable-auto-tool-choice");
    if (has(argv, "--reasoning-parser")) found.thinking = true;
    const task = flagValue(argv, "--task") ?? flagValue(argv, "--runner") ?? "";
    if (["embed", "embedding", "pooling"].includes(task)) found.embedding = true;
  }
  return found;
}

/**
 * The list, from what the server or the file found (null: neither answered) and the command.
 * The command's embedding and vision flags hold whatever was found; an embedding model embeds
 * and nothing else.
 */
export function capabilityList(found: Found | null, command: Found): Capability[] {
  const f: Found = { ...command, ...(found ?? {}) };
  if (command.embedding) f.embedding = true;
  if (command.vision) f.vision = true;
  if (f.embedding) return ["embedding"];
  const out: Capability[] = ["completion"];
  if (f.tools ?? true) out.push("tools");
  if (f.thinking) out.push("thinking");
  if (f.vision) out.push("vision");
  return out;
}

export interface CapabilityDeps {
  fetch?: Fetch | undefined;
  timers?: Timers | undefined;
  /** Reads a GGUF header (src/gpu/gguf); absent: the model file is not read. */
  readGguf?: ((path: string) => Promise<GgufRead>) | undefined;
}

/**
 * Capabilities per model, each source asked once: `/props` once per process (keyed by its
 * pid: a restart is asked afresh), a GGUF file once per path. A failed ask is not kept.
 */
export class Capabilities {
  private readonly props = new Map<string, Promise<Found | null>>();
  private readonly files = new Map<string, Promise<Found | null>>();

  constructor(private readonly deps: CapabilityDeps = {}) {}

  /** `pid`: the running process's, or null when the model is not running. */
  async of(model: ModelConfig, pid: number | null): Promise<Capability[]> {
    if (model.capabilities) return [...model.capabilities];
    const command = fromCommand(model.argv);
    if (model.peer || model.node) return capabilityList(null, command);
    const found =
      (pid !== null && !isVllm(model.argv) ? await this.askServer(model, pid) : null) ??
      (await this.readFile(model));
    return capabilityList(found, command);
  }

  private askServer(model: ModelConfig, pid: number): Promise<Found | null> {
    const key = `${model.id}\u0000${model.proxy}\u0000${pid}`;
    let asked = this.props.get(key);
    if (!asked) {
      asked = this.fetchProps(model.proxy);
      this.props.set(key, asked);
      // Only an answer is kept: a server that was busy or down is asked again next time.
      void asked.then((f) => f === null && this.props.delete(key));
    }
    return asked;
  }

  private async fetchProps(base: string): Promise<Found | null> {
    const limit = setTimeoutSignal(this.deps.timers ?? realTimers, PROPS_DEADLINE_MS);
    try {
      const res = await (this.deps.fetch ?? fetch)(`${base}/props`, {
        signal: limit.signal,
        // A loopback upstream must never go through an HTTP proxy from the environment.
        proxy: false,
      } as RequestInit);
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => {});
        return null;
      }
      const bytes = await readAtMost(res, PROPS_MAX_BYTES);
      const json: unknown = bytes === null ? null : JSON.parse(new TextDecoder().decode(bytes));
      if (!isObj(json)) return null;
      const found = fromProps(json);
      return Object.keys(found).length > 0 ? found : null;
    } catch {
      return null;
    } finally {
      limit.cancel();
    }
  }

  private readFile(model: ModelConfig): Promise<Found | null> {
    const read = this.deps.readGguf;
    const path = modelPath(model.argv);
    if (!read || path === null || !/\.gguf$/i.test(path)) return Promise.resolve(null);
    let found = this.files.get(path);
    if (!found) {
      found = read(path).then(
        (r) => (r.ok ? fromGguf(r.header.metadata) : null),
        () => null,
      );
      this.files.set(path, found);
      void found.then((f) => f === null && this.files.delete(path));
    }
    return found;
  }
}
