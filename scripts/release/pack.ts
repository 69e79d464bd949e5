/**
 * The release folder: one `qm-VERSION-OS-ARCH.tar.gz` per target, each holding the folder
 * `qm-VERSION-OS-ARCH/` with `qm`, `LICENSE`, `README.md` and `quartermaster.toml`; `SHA256SUMS`
 * in the format `sha256sum` writes and `sha256sum -c` reads; and `manifest.json`. docs/release.md
 * describes them; install.sh reads SHA256SUMS.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tarGz } from "./tar.ts";

export interface Target {
  os: "linux" | "darwin";
  /** As the archive and manifest name it: `x64-baseline` is the x64 build for CPUs without AVX2. */
  arch: "x64" | "x64-baseline" | "arm64";
}

/** Every release target, in the order the manifest lists them. */
export const TARGETS: readonly Target[] = [
  { os: "linux", arch: "x64" },
  { os: "linux", arch: "x64-baseline" },
  { os: "linux", arch: "arm64" },
  { os: "darwin", arch: "arm64" },
  { os: "darwin", arch: "x64" },
];

/** `linux-x64-baseline`: what install.sh's QM_INSTALL_PLATFORM and Bun's `--target` name. */
export const platform = (t: Target): string => `${t.os}-${t.arch}`;

/** `qm-0.1.0-linux-arm64`: the archive's name without `.tar.gz`, and its one top folder. */
export const archiveStem = (version: string, t: Target): string => `qm-${version}-${platform(t)}`;

export interface Asset {
  os: string;
  arch: string;
  file: string;
  sha256: string;
  size: number;
}

export interface Manifest {
  version: string;
  commit: string;
  assets: Asset[];
}

export interface PackInput {
  outDir: string;
  version: string;
  /** The full SHA (or "unknown"). */
  commit: string;
  /** Every archive entry's time. */
  epochS: number;
  /** The compiled qm for each target. */
  binaries: { target: Target; path: string }[];
  /** The other files every archive holds, by the name they get there. */
  files: { name: string; path: string }[];
}

export function sha256(data: Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}

/** Writes the archives, SHA256SUMS and manifest.json into `outDir`; returns the manifest. */
export function pack(input: PackInput): Manifest {
  mkdirSync(input.outDir, { recursive: true });
  const shared = input.files.map((f) => ({ name: f.name, data: readFileSync(f.path) }));
  const assets: Asset[] = [];
  for (const { target, path } of input.binaries) {
    const stem = archiveStem(input.version, target);
    const file = `${stem}.tar.gz`;
    const archive = tarGz(
      [
        { name: `${stem}/`, mode: 0o755 },
        { name: `${stem}/qm`, data: readFileSync(path), mode: 0o755 },
        ...shared.map((f) => ({ name: `${stem}/${f.name}`, data: f.data, mode: 0o644 })),
      ],
      input.epochS,
    );
    writeFileSync(join(input.outDir, file), archive);
    assets.push({
      os: target.os,
      arch: target.arch,
      file,
      sha256: sha256(archive),
      size: statSync(join(input.outDir, file)).size,
    });
  }
  // Two spaces: sha256sum's text-mode separator, which `sha256sum -c` and `shasum -c` both read.
  const sums = [...assets]
    .sort((a, b) => (a.file < b.file ? -1 : 1))
    .map((a) => `${a.sha256}  ${a.file}\n`)
    .join("");
  writeFileSync(join(input.outDir, "SHA256SUMS"), sums);
  const manifest: Manifest = { version: input.version, commit: input.commit, assets };
  writeFileSync(join(input.outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}
