/**
 * A small release folder for tests, made by the real packer (scripts/release/pack.ts) from a
 * shell script per target in place of the compiled qm: `qm version` prints `fake qm PLATFORM`.
 * Building the real five targets takes a minute; .ci/run's release step does that.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Manifest, pack, platform, TARGETS } from "../../scripts/release/pack.ts";
import { ROOT } from "../support/qm-process.ts";

export const FAKE_VERSION = "9.8.7-rc.1";
export const FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567";

export interface FakeRelease {
  /** Holds `out/` (the release folder) and `bin/` (the fake binaries). */
  dir: string;
  out: string;
  manifest: Manifest;
}

export function fakeRelease(): FakeRelease {
  const dir = mkdtempSync(join(tmpdir(), "qm-fake-release-"));
  const binaries = TARGETS.map((target) => {
    const path = join(dir, "bin", platform(target), "qm");
    mkdirSync(join(dir, "bin", platform(target)), { recursive: true });
    writeFileSync(path, `#!/bin/sh\necho "fake qm ${platform(target)} $*"\n`, { mode: 0o755 });
    return { target, path };
  });
  const out = join(dir, "out");
  const manifest = pack({
    outDir: out,
    version: FAKE_VERSION,
    commit: FAKE_COMMIT,
    epochS: 1_700_000_000,
    binaries,
    files: ["LICENSE", "README.md", "quartermaster.toml"].map((name) => ({
      name,
      path: join(ROOT, name),
    })),
  });
  return { dir, out, manifest };
}
