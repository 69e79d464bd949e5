/**
 * Whether a macOS executable carries an embedded code signature. Apple Silicon refuses to run
 * arm64 code without one (an ad-hoc signature is enough); Bun signs the executables it
 * cross-compiles for macOS, and the release check makes sure it still does. Reads the Mach-O
 * header (<mach-o/loader.h>) and its LC_CODE_SIGNATURE load command, whose data must start with
 * the embedded-signature superblob magic (<Kernel/kern/cs_blobs.h>, big-endian).
 */
const MH_MAGIC_64 = 0xfeedfacf;
const LC_CODE_SIGNATURE = 0x1d;
const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;

export function machoSignature(bytes: Uint8Array): "signed" | "unsigned" | "not Mach-O 64" {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 32 || view.getUint32(0, true) !== MH_MAGIC_64) return "not Mach-O 64";
  const ncmds = view.getUint32(16, true);
  let at = 32; // mach_header_64
  for (let i = 0; i < ncmds && at + 8 <= bytes.length; i++) {
    const cmd = view.getUint32(at, true);
    const size = view.getUint32(at + 4, true);
    if (cmd === LC_CODE_SIGNATURE) {
      const dataoff = view.getUint32(at + 8, true);
      return dataoff + 4 <= bytes.length &&
        view.getUint32(dataoff, false) === CSMAGIC_EMBEDDED_SIGNATURE
        ? "signed"
        : "unsigned";
    }
    if (size < 8) break;
    at += size;
  }
  return "unsigned";
}
