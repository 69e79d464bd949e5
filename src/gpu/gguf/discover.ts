/**
 * Finds GGUF files under a directory and groups them into candidate models. Symlinks are
 * followed (the Hugging Face cache links snapshots/…/x.gguf to blobs/…), directories
 * only once by real path so a link loop cannot recurse forever. The path printed is the
 * one found, not the blob it resolves to.
 */
import { readdir, realpath, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { parseSplitName } from "./split.ts";

export interface Candidate {
  /** File name the model id is derived from (split suffix removed). */
  name: string;
  /** Part 1 of a split model, or the single file: what `-m` gets. */
  path: string;
  /** Every part in order (one entry for a single file). */
  parts: string[];
}

export interface Discovery {
  models: Candidate[];
  /** Multimodal projectors (`mmproj`): not models on their own. */
  projectors: string[];
  /** Files that cannot become a model, with why. */
  problems: { path: string; reason: string }[];
}

export async function findGgufFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const seen = new Set<string>();
  async function walk(d: string): Promise<void> {
    const real = await realpath(d).catch(() => d);
    if (seen.has(real)) return;
    seen.add(real);
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = join(d, e.name);
      const st = e.isSymbolicLink() ? await stat(p).catch(() => null) : null;
      if (e.isDirectory() || st?.isDirectory()) await walk(p);
      else if ((e.isFile() || st?.isFile()) && /\.gguf$/i.test(e.name)) found.push(p);
    }
  }
  await walk(dir);
  return found.sort();
}

export function groupCandidates(paths: readonly string[]): Discovery {
  const out: Discovery = { models: [], projectors: [], problems: [] };
  const splits = new Map<string, { count: number; parts: Map<number, string> }>();
  for (const p of paths) {
    const file = basename(p);
    if (/mmproj/i.test(file)) {
      out.projectors.push(p);
      continue;
    }
    const split = parseSplitName(file);
    if (!split) {
      out.models.push({ name: file.replace(/\.gguf$/i, ""), path: p, parts: [p] });
      continue;
    }
    const key = `${p.slice(0, p.length - file.length)}${split.base}\0${split.count}`;
    const group = splits.get(key) ?? { count: split.count, parts: new Map<number, string>() };
    group.parts.set(split.part, p);
    splits.set(key, group);
  }
  for (const { count, parts } of splits.values()) {
    const ordered = Array.from({ length: count }, (_, i) => parts.get(i + 1));
    const first = ordered[0] ?? [...parts.values()][0]!;
    const missing = ordered.flatMap((p, i) => (p ? [] : [i + 1]));
    if (missing.length > 0) {
      out.problems.push({
        path: first,
        reason: `split model is missing part${missing.length > 1 ? "s" : ""} ${missing.join(", ")} of ${count}`,
      });
      continue;
    }
    const name = parseSplitName(basename(first))!.base;
    out.models.push({ name, path: first, parts: ordered as string[] });
  }
  out.models.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return out;
}
