/**
 * Prefetch's two touches of the world: which files a model loads (its `cmd`'s GGUF, read by the
 * config's own `modelPath` and the sizer's `splitParts`), and reading a file into the page cache.
 */
import { statSync } from "node:fs";
import { open } from "node:fs/promises";
import { resolve } from "node:path";
import { modelPath } from "../config/index.ts";
import type { ModelConfig } from "../config/types.ts";
import { splitParts } from "../gpu/gguf/index.ts";
import { CHUNK_BYTES, type PrefetchHandle, type PrefetchSource } from "./prefetch.ts";

const GGUF = /\.gguf$/i;

const known = new WeakMap<ModelConfig, readonly string[]>();

/**
 * The GGUF files `model` loads, absolute (a relative `-m` is the model's working directory's,
 * which is qm's), every part of a split model; none without a `.gguf` after `-m`/`--model`, or
 * for a model another box serves. (Whatever its `prefetch`: a running model's files are never
 * prefetched for another.) Kept per config object, which a reload replaces.
 */
export function weightFiles(model: ModelConfig): readonly string[] {
  let files = known.get(model);
  if (files === undefined) {
    const path = model.node || model.peer ? null : modelPath(model.argv);
    files = path !== null && GGUF.test(path) ? splitParts(resolve(path)) : [];
    known.set(model, files);
  }
  return files;
}

/**
 * The file system, read with `node:fs/promises`: each read runs on Bun's thread pool, and the
 * pages it brings in stay in the page cache. One buffer serves every read (the pump has one in
 * flight at most); its contents are never looked at.
 */
export function fileSource(): PrefetchSource {
  let buffer: Uint8Array | null = null;
  return {
    size(path) {
      try {
        const st = statSync(path);
        return st.isFile() ? st.size : null;
      } catch {
        return null;
      }
    },
    async open(path): Promise<PrefetchHandle> {
      const fh = await open(path, "r");
      buffer ??= new Uint8Array(CHUNK_BYTES);
      const buf = buffer;
      return {
        read: async (position, bytes) =>
          (await fh.read(buf, 0, Math.min(bytes, buf.length), position)).bytesRead,
        close: () => fh.close(),
      };
    },
  };
}
