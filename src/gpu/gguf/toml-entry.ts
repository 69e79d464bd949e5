/**
 * Renders one `[models.<id>]` entry for `qm scan`. The id must be a TOML bare key
 * (A–Z a–z 0–9 _ -, TOML 1.0 "Keys"); it is lower-cased so that API clients can type it.
 * `cmd` is split shell-style by qm (config/argv.ts), so the model path is quoted for
 * that, and the whole command is then written as a TOML basic string.
 */
import { BYTES_PER_GB, fmtGb } from "../units.ts";
import type { VramEstimate } from "./estimate.ts";

/** A bare-key id from a file name, unique within `taken` (which it extends). */
export function modelId(fileName: string, taken: Set<string>): string {
  const base =
    fileName
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, "-")
      .replace(/-{2,}/g, "-")
      .replace(/^[-_]+|[-_]+$/g, "") || "model";
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
  taken.add(id);
  return id;
}

/** POSIX sh quoting (XCU 2.2.2): single quotes, with `'` written as `'\''`. */
export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9_./@%+=:,-]+$/.test(s)) return s;
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * A TOML basic string (TOML 1.0 "String"): escape `"`, `\` and control characters
 * other than tab, U+007F included.
 */
export function tomlString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (c < 0x20 || c === 0x7f) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

export interface EntryInput {
  id: string;
  path: string;
  estimate: VramEstimate;
  params: string;
  quant: string;
  gpuLayers?: number;
}

/** The program every entry starts. */
export const SERVER = "llama-server";

/**
 * `--alias ${MODEL_ID}`: the server then names the model by its id in its answers and
 * `/v1/models` (without it llama-server answers with the GGUF path).
 */
export function renderEntry(e: EntryInput): string {
  const est = e.estimate;
  const gb = (b: number) => fmtGb2(b / BYTES_PER_GB);
  let cmd = `${SERVER} --port \${PORT} -m ${shellQuote(e.path)} --ctx-size ${est.ctx} --alias \${MODEL_ID}`;
  if (e.gpuLayers !== undefined) cmd += ` -ngl ${e.gpuLayers}`;
  const lines = [
    `[models.${e.id}]`,
    `# ${est.arch ?? "unknown arch"} · ${e.params} params · ${e.quant} · weights ${gb(est.weightsBytes)} GB` +
      ` + KV ${gb(est.kvBytes)} GB at ctx ${est.ctx} + overhead ${gb(est.overheadBytes)} GB`,
    ...est.notes.map((n) => `# note: ${n}`),
    `cmd = ${tomlString(cmd)}`,
    `est_vram_gb = ${fmtGb(est.gb)}`,
  ];
  return `${lines.join("\n")}\n`;
}

/** Two decimals for the breakdown comment, where 0.1 GB hides too much. */
function fmtGb2(gb: number): string {
  return gb.toFixed(2);
}
