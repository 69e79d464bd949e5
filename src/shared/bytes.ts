/**
 * Byte searches on a plain `Uint8Array` without wrapping it in a `Buffer` first: a relayed
 * chunk is a `Uint8Array`, and `Buffer.from(chunk.buffer, …)` costs about as much as the search
 * itself (~100 ns in Bun), on every chunk. `Buffer.prototype.indexOf` is native and works on
 * any `Uint8Array` it is called on; short comparisons are plain loops (a native compare called
 * this way costs more than comparing 30 bytes in JavaScript).
 */
const bufferIndexOf = Buffer.prototype.indexOf;
const bufferCopy = Buffer.prototype.copy;

/** Where `needle` first occurs in `bytes` at or after `from`, or -1. */
export function indexOfBytes(bytes: Uint8Array, needle: Uint8Array, from = 0): number {
  return bufferIndexOf.call(bytes as Buffer, needle, from);
}

/** `bytes` holds `needle` at `at`. */
export function bytesAt(bytes: Uint8Array, at: number, needle: Uint8Array): boolean {
  const n = needle.length;
  if (at < 0 || at + n > bytes.length) return false;
  for (let i = 0; i < n; i++) if (bytes[at + i] !== needle[i]) return false;
  return true;
}

/** `bytes` ends with the first `k` bytes of `needle`, for some 0 < k < needle.length: that many. */
export function endsWithStartOf(bytes: Uint8Array, needle: Uint8Array): number {
  const n = bytes.length;
  for (let k = Math.min(needle.length - 1, n); k > 0; k--) {
    let i = 0;
    while (i < k && bytes[n - k + i] === needle[i]) i++;
    if (i === k) return k;
  }
  return 0;
}

/** Copies `source[start, end)` into `target` at `at` (no subarray views made). */
export function copyBytes(
  source: Uint8Array,
  target: Uint8Array,
  at: number,
  start: number,
  end: number,
): void {
  bufferCopy.call(source as Buffer, target, at, start, end);
}
