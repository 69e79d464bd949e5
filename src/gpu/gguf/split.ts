/**
 * Split models: llama.cpp's gguf-split writes `<name>-00001-of-00003.gguf` …
 * (format "%s-%05d-of-%05d.gguf", llama_split_path). Part 1 holds the metadata; every
 * part holds `split.no` (0-based), `split.count`, and part 1 `split.tensors.count`.
 * llama-server is given part 1 and finds the rest; the weights are the sum of all parts.
 */
import { metaNumber } from "./metadata.ts";
import type { GgufHeader, GgufModel } from "./types.ts";

const SPLIT_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;

export interface SplitName {
  /** File name without the `-0000i-of-0000n.gguf` suffix. */
  base: string;
  /** 1-based, as in the file name. */
  part: number;
  count: number;
}

export function parseSplitName(fileName: string): SplitName | null {
  const m = SPLIT_NAME.exec(fileName);
  if (!m) return null;
  const part = Number(m[2]);
  const count = Number(m[3]);
  if (part < 1 || count < 1 || part > count) return null;
  return { base: m[1]!, part, count };
}

/**
 * Every file of the model `path` names: parts 1..n of a split model (any part may be named:
 * llama-server is given part 1 and finds the rest), else `path` alone.
 */
export function splitParts(path: string): string[] {
  const slash = path.lastIndexOf("/");
  const split = parseSplitName(path.slice(slash + 1));
  if (!split) return [path];
  const dir = path.slice(0, slash + 1);
  const pad = (n: number) => String(n).padStart(5, "0");
  return Array.from(
    { length: split.count },
    (_, i) => `${dir}${split.base}-${pad(i + 1)}-of-${pad(split.count)}.gguf`,
  );
}

/** Joins the headers of parts 1..n (in order) into one model, or says why not. */
export function mergeSplit(
  parts: readonly GgufHeader[],
): { ok: true; model: GgufModel } | { ok: false; reason: string } {
  const first = parts[0];
  if (!first) return { ok: false, reason: "no parts" };
  for (const [i, h] of parts.entries()) {
    const no = metaNumber(h.metadata, "split.no");
    const count = metaNumber(h.metadata, "split.count");
    if (no !== undefined && no !== i) {
      return { ok: false, reason: `part ${i + 1} says it is split.no ${no}` };
    }
    if (count !== undefined && count !== parts.length) {
      return {
        ok: false,
        reason: `part ${i + 1} says split.count ${count}, found ${parts.length}`,
      };
    }
  }
  const tensors = parts.flatMap((h) => h.tensors);
  const expected = metaNumber(first.metadata, "split.tensors.count");
  if (expected !== undefined && expected !== tensors.length) {
    return {
      ok: false,
      reason: `split.tensors.count is ${expected} but the parts hold ${tensors.length} tensors`,
    };
  }
  return { ok: true, model: { metadata: first.metadata, tensors } };
}
