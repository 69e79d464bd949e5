/**
 * `keep_kv` folders on disk: the manifest's name, what stamps a model file, and the removal
 * of folders no model keeps any more. Invariants: ./design.md.
 */
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../shared/log.ts";

/** The manifest a `keep_kv` folder holds; a folder without one is not qm's. */
export const MANIFEST = "manifest.json";

/**
 * Removes the `keep_kv` folders `names` under `root` (`<state_dir>/kv`): their models were
 * removed, or lost `keep_kv`. Only a folder holding qm's manifest is removed, never anything else
 * put there. Never throws; returns the folders removed.
 */
export function removeKvFolders(root: string, names: Iterable<string>, log: Logger): string[] {
  const removed: string[] = [];
  for (const name of names) {
    const dir = join(root, name);
    try {
      if (!existsSync(join(dir, MANIFEST))) continue;
      const mb = folderBytes(dir) / (1024 * 1024);
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
      log.info(`keep_kv: removed ${dir} (${mb.toFixed(1)} MiB); no model keeps it any more`);
    } catch (err) {
      log.warn(`keep_kv: could not remove ${dir}: ${message(err)}`);
    }
  }
  return removed;
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const f of readdirSync(dir)) {
    try {
      total += statSync(join(dir, f)).size;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/**
 * What tells one model file from another without reading it: its path, size and mtime (a
 * file replaced or re-downloaded under the same name gets a new mtime). Null: no model file
 * in the command; a file that cannot be read stamps as missing, (its server cannot start either).
 */
export function modelStamp(path: string | null): string | null {
  if (path === null) return null;
  try {
    const st = statSync(path);
    return JSON.stringify([path, st.size, st.mtimeMs]);
  } catch {
    return JSON.stringify([path, "missing"]);
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
