/**
 * `bun run build`: compiles src/cli/main.ts into the one executable, dist/qm (with its source map,
 * dist/qm.map). The tests that run the binary build it through `binaryIsStale` and `buildQm`
 * too (tests/support/binary.ts), so there is one definition of how qm is built.
 *
 * The flags, and the commit and date that `qm version` prints, come from
 * scripts/release/build-args.ts, which `npm run release` uses for every target.
 *
 * It is built twice: a run of the first build records the order its bytecode is laid out in
 * (scripts/release/bytecode-order.ts).
 *
 * The binary is written to a temporary name beside it and renamed into place: rename(2) swaps
 * the name atomically, so a qm still running from the old dist/qm keeps its file, and a second
 * build running at the same time (another `bun test`) never leaves half a binary behind.
 */
import { existsSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildArgs, buildStamp } from "./release/build-args.ts";
import { recordOrder } from "./release/bytecode-order.ts";

export const ROOT = resolve(import.meta.dir, "..");
export const BINARY = join(ROOT, "dist/qm");

function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** True when `binary` is missing or older than any file under `root`/src or `root`/package.json. */
export function binaryIsStale(root = ROOT, binary = join(root, "dist/qm")): boolean {
  if (!existsSync(binary)) return true;
  const sources = Math.max(
    newestUnder(join(root, "src")),
    statSync(join(root, "package.json")).mtimeMs,
  );
  return statSync(binary).mtimeMs < sources;
}

/**
 * Builds dist/qm (or `outfile`). The result carries the time the build began as its mtime: a
 * source saved while the build ran is then newer than the binary, so the next check rebuilds.
 */
export async function buildQm(outfile = BINARY): Promise<void> {
  const began = new Date();
  const temp = `${outfile}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const stamp = buildStamp({ cwd: ROOT });
  const compile = async (order?: readonly string[]) => {
    const build = Bun.spawn([process.execPath, ...buildArgs(stamp, temp, undefined, order)], {
      cwd: ROOT,
      stdout: "ignore",
      stderr: "inherit",
    });
    if ((await build.exited) !== 0) throw new Error(`bun build failed (exit ${build.exitCode})`);
  };
  try {
    // Twice: the first build runs once to record the order its bytecode is laid out in.
    await compile();
    const order = await recordOrder(temp);
    try {
      if (order.files.length > 0) await compile(order.files);
      else
        process.stderr.write(
          `build: no bytecode order recorded (${order.failed}); laid out as compiled\n`,
        );
    } finally {
      order.dispose();
    }
    utimesSync(temp, began, began);
    // The map first: a binary that is in place is taken as built, so its map must be there.
    if (existsSync(`${temp}.map`)) renameSync(`${temp}.map`, `${outfile}.map`);
    renameSync(temp, outfile);
  } finally {
    rmSync(temp, { force: true });
    rmSync(`${temp}.map`, { force: true });
  }
}

if (import.meta.main) {
  const began = performance.now();
  const out = process.argv[2] ? resolve(process.argv[2]) : BINARY;
  await buildQm(out);
  const size = (statSync(out).size / 2 ** 20).toFixed(0);
  const took = ((performance.now() - began) / 1000).toFixed(1);
  process.stderr.write(`build: ${out} (${size} MiB) in ${took} s\n`);
}
