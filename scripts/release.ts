/**
 * `npm run release [-- --targets linux-x64,linux-arm64] [--out dist/release]`: cross-compiles qm
 * for every release target (scripts/release/pack.ts) and writes the release folder — archives,
 * SHA256SUMS, manifest.json (docs/release.md).
 *
 * Bun compiles for another platform by downloading that platform's Bun runtime, the npm package
 * `@oven/bun-OS-ARCH[-baseline]` from registry.npmjs.org, into its install cache
 * (`~/.bun/install/cache`, or `BUN_INSTALL_CACHE_DIR`); its own platform needs no download. The
 * runtime is the same version as the Bun that builds (package.json pins it).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildArgs, buildStamp, git } from "./release/build-args.ts";
import { recordOrder } from "./release/bytecode-order.ts";
import { pack, platform, TARGETS, type Target } from "./release/pack.ts";

const root = resolve(import.meta.dir, "..");
const { values } = parseArgs({
  options: {
    targets: { type: "string" },
    out: { type: "string", default: "dist/release" },
  },
});

function chosen(list: string | undefined): Target[] {
  if (list === undefined) return [...TARGETS];
  return list.split(",").map((name) => {
    const found = TARGETS.find((t) => platform(t) === name.trim());
    if (!found) {
      throw new Error(`unknown target ${name}; targets: ${TARGETS.map(platform).join(", ")}`);
    }
    return found;
  });
}

const log = (line: string) => process.stderr.write(`release: ${line}\n`);
const started = performance.now();
const targets = chosen(values.targets);
const outDir = resolve(root, values.out);
const stamp = buildStamp({ cwd: root });
if (git(["status", "--porcelain", "--untracked-files=no"], root)) {
  log(
    `warning: the checkout has uncommitted changes; the binaries say commit ${stamp.shortCommit}`,
  );
}

function compile(path: string, target?: string, order?: readonly string[]): void {
  const build = Bun.spawnSync([process.execPath, ...buildArgs(stamp, path, target, order)], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) {
    throw new Error(
      `bun build for ${target ?? "this machine"} failed:\n${build.stdout}${build.stderr}`,
    );
  }
}

rmSync(outDir, { recursive: true, force: true });
const work = join(outDir, ".build");
// One run of this machine's build records the bytecode's layout for every target's.
mkdirSync(join(work, "record"), { recursive: true });
compile(join(work, "record/qm"));
const order = await recordOrder(join(work, "record/qm"));
log(
  order.files.length > 0
    ? `recorded the bytecode's order (${order.files.length} runs)`
    : `no bytecode order recorded (${order.failed}); the binaries are laid out as compiled`,
);
const binaries = targets.map((target) => {
  const path = join(work, platform(target), "qm");
  mkdirSync(join(work, platform(target)), { recursive: true });
  const t0 = performance.now();
  compile(path, platform(target), order.files);
  log(`compiled ${platform(target)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { target, path };
});
order.dispose();

const manifest = pack({
  outDir,
  version: stamp.version,
  commit: stamp.commit,
  epochS: stamp.epochS,
  binaries,
  files: ["LICENSE", "README.md", "quartermaster.toml"].map((name) => ({
    name,
    path: join(root, name),
  })),
});
rmSync(work, { recursive: true, force: true });
for (const a of manifest.assets) log(`${a.file}  ${(a.size / 2 ** 20).toFixed(1)} MiB`);
log(
  `qm ${stamp.version} (commit ${stamp.shortCommit}) → ${values.out} in ` +
    `${((performance.now() - started) / 1000).toFixed(1)} s`,
);
