import { splitCommand } from "./argv.ts";
import type { ModelConfig } from "./types.ts";

/** `name?ctx=N`: a request for a model at another context size. */
const VARIANT = /^(.+)\?ctx=(\d+)$/;
export const MIN_CTX = 256;
export const MAX_CTX = 10_000_000;

export function parseVariantName(name: string): { base: string; ctx: number } | null {
  const m = VARIANT.exec(name);
  return m ? { base: m[1]!, ctx: Number(m[2]) } : null;
}

// The two macros a template still holds (spelled out: they are literal text, not templates).
const PORT = "$" + "{PORT}";
const MODEL_ID = "$" + "{MODEL_ID}";

/** Flags llama.cpp (and servers that copy it) read the context size from. */
const CTX_FLAGS = new Set(["--ctx-size", "-c", "--ctx_size"]);
/** vLLM's (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`). */
const VLLM_FLAGS = new Set(["--max-model-len", "--max_model_len"]);

/** A vLLM command: its program, or a module it runs, is vLLM's. */
export function isVllm(argv: readonly string[]): boolean {
  return argv.some((a) => a.split("/").pop() === "vllm" || a.startsWith("vllm.entrypoints"));
}

/** A llama.cpp `llama-server` command (its program, or one it runs, is `llama-server`). */
export function isLlamaServer(argv: readonly string[]): boolean {
  return argv.some((a) => a.split("/").pop() === "llama-server");
}

/**
 * `scrape_upstream_metrics = "auto"`: on where the server is known to expose Prometheus
 * metrics — llama-server started with `--metrics`, and vLLM (always).
 */
export function scrapesMetricsByDefault(argv: readonly string[]): boolean {
  return isVllm(argv) || (isLlamaServer(argv) && argv.includes("--metrics"));
}

/**
 * argv with the context size set to `ctx`: an existing flag is rewritten, else one is added —
 * vLLM's `--max-model-len` for a vLLM command, llama.cpp's `--ctx-size` for any other.
 */
export function withContextSize(argv: readonly string[], ctx: number): string[] {
  const vllm = isVllm(argv);
  const flags = vllm ? VLLM_FLAGS : CTX_FLAGS;
  const out = [...argv];
  for (let i = 0; i < out.length; i++) {
    const arg = out[i]!;
    if (flags.has(arg) && i + 1 < out.length) {
      out[i + 1] = String(ctx);
      return out;
    }
    const eq = arg.indexOf("=");
    if (eq > 0 && flags.has(arg.slice(0, eq))) {
      out[i] = `${arg.slice(0, eq)}=${ctx}`;
      return out;
    }
  }
  return [...out, vllm ? "--max-model-len" : "--ctx-size", String(ctx)];
}

/**
 * The context size a command sets (`--ctx-size N`, `-c N`, `--ctx-size=N`; vLLM's
 * `--max-model-len`), or null when it sets none (the server then takes the model's own).
 */
export function contextSize(argv: readonly string[]): number | null {
  const flags = isVllm(argv) ? VLLM_FLAGS : CTX_FLAGS;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const [flag, value] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, argv[i + 1]];
    if (flags.has(flag)) return value !== undefined && /^\d+$/.test(value) ? Number(value) : null;
  }
  return null;
}

/** The model file a llama-server-style command loads (`-m PATH` / `--model PATH`), if any. */
export function modelPath(argv: readonly string[]): string | null {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if ((arg === "-m" || arg === "--model") && i + 1 < argv.length) return argv[i + 1]!;
    if (arg.startsWith("--model=")) return arg.slice("--model=".length);
  }
  return null;
}

/**
 * Mints `base?ctx=N`: the base model's command with its own port and the context size set,
 * in the base's group, with the given VRAM estimate (0 = unknown). Pure.
 */
export function mintVariant(
  base: ModelConfig,
  opts: { ctx: number; port: number; estVramGb: number },
): ModelConfig {
  const fill = (s: string) => s.replaceAll(PORT, String(opts.port)).replaceAll(MODEL_ID, base.id);
  const t = base.template;
  const argv = withContextSize(splitCommand(fill(t.cmd)), opts.ctx);
  const check = fill(t.checkEndpoint);
  return {
    ...base,
    id: `${base.id}?ctx=${opts.ctx}`,
    cmd: argv.join(" "),
    argv,
    proxy: fill(t.proxy).replace(/\/+$/, ""),
    port: t.cmd.includes(PORT) || t.proxy.includes(PORT) ? opts.port : null,
    checkEndpoint: check === "none" ? null : check,
    cmdStop: fill(t.cmdStop),
    useModelName: fill(t.useModelName),
    env: Object.fromEntries(Object.entries(t.env).map(([k, v]) => [k, fill(v)])),
    aliases: [],
    unlisted: true,
    estVramGb: opts.estVramGb,
    variantOf: { base: base.id, ctx: opts.ctx },
    // A cache saved at one context size is no use at another: variants keep none.
    keepKv: null,
  };
}
