/**
 * What Ollama's model-listing routes say about qm's configured models: `/api/tags`, `/api/ps`
 * and `/api/show`. qm has no model files of its own, so the details are best effort, read
 * from the model's id and the name of the file its command loads (a `.gguf` name, a
 * quantization tag, a parameter size). Nothing else of the command or the env is shown, nor
 * anything a secret in them could be read back from: a command may carry `--api-key`.
 */
import { createHash, randomBytes } from "node:crypto";
import { basename } from "node:path";
import type { Capability, ModelConfig } from "../../config/types.ts";
import { modelPath } from "../../config/variant.ts";
import type { ModelStatusJson } from "../status-json.ts";

const GIB = 1024 ** 3;
/** Ollama's `expires_at` for a model kept resident for ever (`keep_alive: -1`). */
const NEVER = "2318-01-01T00:00:00Z";

export interface Details {
  parent_model: string;
  format: string;
  family: string;
  families: string[];
  parameter_size: string;
  quantization_level: string;
}

/** The model's id and the name of the file it loads: all that details are read from. */
function shownName(m: ModelConfig): string {
  const file = m.peer ? null : modelPath(m.argv);
  return file === null ? m.id : `${m.id} ${basename(file)}`;
}

export function details(m: ModelConfig): Details {
  const text = shownName(m);
  const params = /(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)[bB](?![a-z])/i.exec(text)?.[1];
  const quant = /\b(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32)\b/i.exec(text)?.[1];
  const family = /^[a-z]+/i.exec(m.id.split("/").at(-1) ?? "")?.[0]?.toLowerCase() ?? "";
  return {
    parent_model: "",
    format: /\.gguf\b/i.test(text) ? "gguf" : "",
    family,
    families: family ? [family] : [],
    parameter_size: params ? `${params}B` : "",
    quantization_level: quant ? quant.toUpperCase() : "",
  };
}

/**
 * A digest changes with the command, as Ollama's changes with the model. Salted per process: a
 * plain hash of a command whose only unknown is a short `--api-key` could be searched offline.
 */
const SALT = randomBytes(16);
const digest = (m: ModelConfig) =>
  createHash("sha256").update(SALT).update(`${m.id}\u0000${m.cmd}`).digest("hex");

export function tagEntry(m: ModelConfig, modifiedAt: string) {
  return {
    name: m.id,
    model: m.id,
    modified_at: modifiedAt,
    size: Math.round(m.estVramGb * GIB),
    digest: digest(m),
    details: details(m),
  };
}

/** A model is resident from its start until it has stopped. */
export function isResident(s: ModelStatusJson): boolean {
  return s.state === "starting" || s.state === "ready" || s.state === "stopping";
}

/**
 * When the model will be unloaded: an idle model when its TTL (or the `keep_alive` a request
 * set) runs out; a busy one that long after now; never without either. A hold that lasts
 * longer keeps it that much longer.
 */
export function expiresAt(s: ModelStatusJson, now: number): string {
  const ttlMs = s.keep_alive_ms ?? (s.ttl_s > 0 ? s.ttl_s * 1000 : -1);
  if (s.unload_at_ms === null && ttlMs < 0) return NEVER;
  const end = Math.max(s.unload_at_ms ?? now + ttlMs, s.held_until_ms ?? 0);
  return new Date(end).toISOString();
}

export function psEntry(m: ModelConfig, s: ModelStatusJson, modifiedAt: string, now: number) {
  const { modified_at: _, ...tag } = tagEntry(m, modifiedAt);
  return { ...tag, expires_at: expiresAt(s, now), size_vram: Math.round(s.est_vram_gb * GIB) };
}

/**
 * A loaded model of a peer (its state there "ready"), by its `PEER/MODEL` name. Its size and
 * when the peer will unload it are the peer's business: 0, and Ollama's "never".
 */
export function peerPsEntry(m: ModelConfig, modifiedAt: string) {
  const { modified_at: _, ...tag } = tagEntry(m, modifiedAt);
  return { ...tag, expires_at: NEVER, size_vram: 0 };
}

/**
 * `/api/show`. The modelfile is a comment naming the model (and, for a peer's model, the peer
 * and the name it is sent as): never the command, which may carry secrets.
 */
export function showEntry(m: ModelConfig, modifiedAt: string, capabilities: Capability[]) {
  const d = details(m);
  const origin = m.peer
    ? `# served by peer "${m.peer.peer}" as "${m.peer.remote}"\n`
    : `# model "${m.id}", configured in qm's config\n`;
  return {
    modelfile: `# served by quartermaster\n${origin}`,
    parameters: "",
    template: "",
    details: d,
    model_info: { "general.architecture": d.family, "general.basename": m.id },
    capabilities,
    modified_at: modifiedAt,
  };
}
