// Preloaded by `bun test` (bunfig.toml): integration tests run the compiled dist/qm, so rebuild
// it first when any source file is newer than the binary — a stale binary would test old code.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const binary = join(root, "dist/qm");

function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const sources = Math.max(
  newestUnder(join(root, "src")),
  statSync(join(root, "package.json")).mtimeMs,
);
if (!existsSync(binary) || statSync(binary).mtimeMs < sources) {
  const build = Bun.spawnSync([process.execPath, "run", "build"], {
    cwd: root,
    stdout: "ignore",
    stderr: "inherit",
  });
  if (build.exitCode !== 0) throw new Error("bun run build failed: integration tests need dist/qm");
}
