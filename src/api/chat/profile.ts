/**
 * Which OpenAI dialect the upstream speaks. The servers agree on the chat API but differ at
 * its edges (docs/translation.md §2.1): llama.cpp only parses `tool_choice` strings and
 * compiles tool schemas into grammars, vLLM renamed `reasoning_content` to `reasoning`, the
 * thinking switches differ. The config has no backend field, so the model's command decides.
 */
import type { ModelConfig } from "../../config/types.ts";

export type Profile = "llamacpp" | "vllm" | "mistralrs" | "generic";

/** A model's dialect: a managed mistral.rs node's models speak mistral.rs's; others, by command. */
export function profileOf(model: Pick<ModelConfig, "argv" | "node">): Profile {
  return model.node ? "mistralrs" : profileFromCommand(model.argv);
}

export function profileFromCommand(argv: readonly string[]): Profile {
  const program = (argv[0] ?? "").split("/").pop() ?? "";
  const cmd = argv.join(" ");
  if (/llama-server|llama_server/.test(program) || /\bllama-server\b/.test(cmd)) {
    return "llamacpp";
  }
  // `vllm serve …` or `python -m vllm.entrypoints.openai.api_server …`.
  if (program === "vllm" || /\bvllm[ .]/.test(cmd)) return "vllm";
  if (/mistralrs/.test(program)) return "mistralrs";
  return "generic";
}

/** The field an assistant turn's reasoning goes back in (vLLM reads `reasoning`). */
export function reasoningFields(profile: Profile): ("reasoning_content" | "reasoning")[] {
  switch (profile) {
    case "llamacpp":
    case "mistralrs":
      return ["reasoning_content"];
    case "vllm":
      return ["reasoning"];
    default:
      return ["reasoning_content", "reasoning"];
  }
}
