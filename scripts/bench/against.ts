/**
 * `bun run bench --against REV`: the compiled `qm` of another revision, built once into
 * `.bench/rev-SHA/` (git-ignored) from `git archive REV` with this checkout's node_modules, so
 * the two binaries can be measured side by side in one run on one box.
 */
import { existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./qm.ts";
import { log } from "./util.ts";

export interface Binary {
  /** What the report calls it: `current` or the revision's short SHA. */
  label: string;
  /** Path of the compiled `qm`. */
  bin: string;
}

function git(args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT, stderr: "pipe" });
  if (r.exitCode !== 0) {
    throw new Error(`git ${args.join(" ")}: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`);
  }
  return r.stdout.toString().trim();
}

/**
 * Builds (or reuses) the binary of `rev`. The tree is exported with `git archive`, not checked
 * out, so the working tree and its index are never touched; the revision's own `bun run build`
 * script builds it (its flags may differ from today's).
 */
export async function buildRevision(rev: string): Promise<Binary> {
  const sha = git(["rev-parse", "--verify", `${rev}^{commit}`]);
  const short = sha.slice(0, 7);
  const dir = join(ROOT, ".bench", `rev-${short}`);
  const bin = join(dir, "dist", "qm");
  if (existsSync(bin)) {
    log(`--against ${rev}: reusing ${bin}`);
    return { label: short, bin };
  }
  log(`--against ${rev}: building ${short} in ${dir}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = Bun.spawn(["git", "archive", "--format=tar", sha], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "inherit",
  });
  const untar = Bun.spawn(["tar", "-x", "-C", dir], {
    stdin: archive.stdout,
    stderr: "inherit",
  });
  if ((await archive.exited) !== 0 || (await untar.exited) !== 0) {
    throw new Error(`could not export ${short} (git archive | tar)`);
  }
  // The revision's dependencies are today's where their versions agree; a build that needs
  // another version fails below and says so.
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  const build = Bun.spawn([process.execPath, "run", "build"], {
    cwd: dir,
    stdout: "ignore",
    stderr: "inherit",
  });
  if ((await build.exited) !== 0 || !existsSync(bin)) {
    throw new Error(`bun run build failed for ${short} (in ${dir})`);
  }
  return { label: short, bin };
}
