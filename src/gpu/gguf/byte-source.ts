/**
 * Random access to a file's bytes without reading it whole: a GGUF is gigabytes of tensor
 * data after a header of kilobytes to a few megabytes. `Bun.file().slice()` reads only
 * the requested range.
 */
import { stat } from "node:fs/promises";

export interface ByteSource {
  readonly name: string;
  readonly size: number;
  /** Bytes [start, end), end ≤ size. */
  read(start: number, end: number): Promise<Uint8Array>;
}

export async function fileSource(path: string): Promise<ByteSource> {
  const st = await stat(path);
  const file = Bun.file(path);
  return {
    name: path,
    size: st.size,
    read: async (start, end) => new Uint8Array(await file.slice(start, end).arrayBuffer()),
  };
}

export function bytesSource(bytes: Uint8Array, name = "<memory>"): ByteSource {
  return { name, size: bytes.length, read: async (start, end) => bytes.subarray(start, end) };
}
