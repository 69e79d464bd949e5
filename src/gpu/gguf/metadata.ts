/** Typed reads of GGUF metadata; anything of the wrong type reads as absent. */
import type { GgufValue } from "./types.ts";

type Meta = ReadonlyMap<string, GgufValue>;

export function metaString(m: Meta, key: string): string | undefined {
  const v = m.get(key);
  return typeof v === "string" ? v : undefined;
}

export function metaNumber(m: Meta, key: string): number | undefined {
  const v = m.get(key);
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/**
 * A value that is either one number for every layer or an array with one per layer
 * (e.g. `<arch>.attention.head_count_kv` in models mixing attention and recurrent or
 * sliding-window layers).
 */
export function metaPerLayer(m: Meta, key: string): number | number[] | undefined {
  const v = m.get(key);
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "object" && v.items) {
    const nums = v.items.filter((x): x is number => typeof x === "number");
    return nums.length === v.items.length && nums.length > 0 ? nums : undefined;
  }
  return undefined;
}

export function layerValue(v: number | number[], layer: number): number {
  return typeof v === "number" ? v : (v[layer] ?? 0);
}
