/**
 * A tar writer for release archives: POSIX ustar (IEEE Std 1003.1, `pax` "ustar Interchange
 * Format"), gzip-compressed. Written here rather than by calling `tar` because the archives must
 * be the same on every build machine: GNU tar and BSD tar differ in the flags that fix owners,
 * modes, times and order, and `Bun.Archive` sets no file modes (the binary must stay executable).
 * Every entry is owned by 0:0, carries the given time, and comes in the order given.
 */

export interface TarEntry {
  /** Path inside the archive; a folder's ends with "/". At most 100 bytes (no prefix field). */
  name: string;
  /** Absent for a folder. */
  data?: Uint8Array;
  /** Permission bits, e.g. 0o755. */
  mode: number;
}

const BLOCK = 512;
const encoder = new TextEncoder();

/** Writes `value` as NUL-terminated octal, zero-padded to fill `width` bytes. */
function octal(header: Uint8Array, offset: number, width: number, value: number): void {
  const text = value.toString(8).padStart(width - 1, "0");
  if (text.length > width - 1) throw new Error(`tar: ${value} does not fit ${width} bytes`);
  header.set(encoder.encode(`${text}\0`), offset);
}

function header(entry: TarEntry, mtimeS: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const name = encoder.encode(entry.name);
  if (name.length > 100) throw new Error(`tar: name longer than 100 bytes: ${entry.name}`);
  const folder = entry.name.endsWith("/");
  h.set(name, 0);
  octal(h, 100, 8, entry.mode);
  octal(h, 108, 8, 0); // uid
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, folder ? 0 : (entry.data?.length ?? 0));
  octal(h, 136, 12, mtimeS);
  h.set(encoder.encode("        "), 148); // the checksum counts its own field as spaces
  h[156] = (folder ? "5" : "0").charCodeAt(0);
  h.set(encoder.encode("ustar\0" + "00"), 257);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.set(encoder.encode(`${sum.toString(8).padStart(6, "0")}\0 `), 148);
  return h;
}

/** The uncompressed archive. */
export function tar(entries: TarEntry[], mtimeS: number): Uint8Array<ArrayBuffer> {
  const size = entries.reduce(
    (n, e) => n + BLOCK + Math.ceil((e.data?.length ?? 0) / BLOCK) * BLOCK,
    2 * BLOCK, // two zero blocks end the archive
  );
  const out = new Uint8Array(size);
  let at = 0;
  for (const entry of entries) {
    out.set(header(entry, mtimeS), at);
    at += BLOCK;
    if (entry.data && !entry.name.endsWith("/")) {
      out.set(entry.data, at);
      at += Math.ceil(entry.data.length / BLOCK) * BLOCK;
    }
  }
  return out;
}

/** The archive, gzip-compressed (RFC 1952) at zlib's default level. */
export function tarGz(entries: TarEntry[], mtimeS: number): Uint8Array {
  return Bun.gzipSync(tar(entries, mtimeS), { level: 6 });
}
