/**
 * The release check's Mach-O reader (scripts/release/macho.ts) on headers built here: it finds
 * LC_CODE_SIGNATURE among other load commands and checks the blob it points at.
 */
import { expect, test } from "bun:test";
import { machoSignature } from "../../scripts/release/macho.ts";

/** A mach_header_64 and load commands (cmd, size), with `blob` at `dataoff` when signed. */
function macho(commands: [number, number][], signatureMagic?: number): Uint8Array {
  const bytes = new Uint8Array(4096);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, 0xfeedfacf, true);
  view.setUint32(16, commands.length, true);
  let at = 32;
  for (const [cmd, size] of commands) {
    view.setUint32(at, cmd, true);
    view.setUint32(at + 4, size, true);
    if (cmd === 0x1d) view.setUint32(at + 8, 2048, true);
    at += size;
  }
  if (signatureMagic !== undefined) view.setUint32(2048, signatureMagic, false);
  return bytes;
}

test("an embedded signature after other load commands is found", () => {
  expect(
    machoSignature(
      macho(
        [
          [0x19, 72],
          [0x2, 24],
          [0x1d, 16],
        ],
        0xfade0cc0,
      ),
    ),
  ).toBe("signed");
});

test("no LC_CODE_SIGNATURE, or one pointing at something else, is unsigned", () => {
  expect(
    machoSignature(
      macho([
        [0x19, 72],
        [0x2, 24],
      ]),
    ),
  ).toBe("unsigned");
  expect(machoSignature(macho([[0x1d, 16]], 0x12345678))).toBe("unsigned");
});

test("an ELF file is not Mach-O", () => {
  expect(machoSignature(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, ...new Uint8Array(60)]))).toBe(
    "not Mach-O 64",
  );
});
