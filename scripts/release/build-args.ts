/**
 * How a qm binary is compiled — one place for `npm run build` (dist/qm, this machine) and
 * `npm run release` (every target): the same flags, and the commit and date stamped in with
 * `--define`, so `qm version` says what it was built from.
 */
import pkg from "../../package.json" with { type: "json" };

export interface BuildStamp {
  /** package.json's version. */
  version: string;
  /** The full SHA of HEAD, or "unknown" outside a git checkout (or without git). */
  commit: string;
  /** Its short form, as `git rev-parse --short` prints it, or "unknown". */
  shortCommit: string;
  /** The build's date, YYYY-MM-DD in UTC. */
  date: string;
  /** The build's time in seconds since the epoch (archive entries carry it). */
  epochS: number;
}

/** Runs git; undefined when git is missing or fails (not a checkout). */
export type Git = (args: string[], cwd: string) => string | undefined;

/** Runs the git program `bin`; a missing one answers undefined like a failed command. */
export function gitRunner(bin = "git"): Git {
  return (args, cwd) => {
    try {
      const r = Bun.spawnSync([bin, ...args], { cwd, stdout: "pipe", stderr: "ignore" });
      return r.exitCode === 0 ? r.stdout.toString().trim() || undefined : undefined;
    } catch {
      return undefined; // no such program
    }
  };
}

export const git: Git = gitRunner();

/**
 * What the build stamps. The time is `SOURCE_DATE_EPOCH` when set (the reproducible-builds
 * convention, https://reproducible-builds.org/specs/source-date-epoch/), else now.
 */
export function buildStamp(opts: {
  cwd: string;
  env?: Record<string, string | undefined>;
  now?: () => number;
  run?: Git;
}): BuildStamp {
  const run = opts.run ?? git;
  const env = opts.env ?? process.env;
  const commit = run(["rev-parse", "--verify", "HEAD"], opts.cwd);
  const shortCommit = commit ? run(["rev-parse", "--short", commit], opts.cwd) : undefined;
  const fromEnv = env.SOURCE_DATE_EPOCH ?? "";
  const epochS = /^\d{1,12}$/.test(fromEnv)
    ? Number(fromEnv)
    : Math.floor((opts.now ?? Date.now)() / 1000);
  return {
    version: pkg.version,
    commit: commit ?? "unknown",
    shortCommit: shortCommit ?? "unknown",
    date: new Date(epochS * 1000).toISOString().slice(0, 10),
    epochS,
  };
}

/**
 * `bun build` arguments for qm's entry point. `target` is a Bun compile target without its
 * `bun-` prefix (`linux-arm64`); none builds for this machine. src/version.ts reads the two
 * defines. `order`: the records of a run that lay out the bytecode (bytecode-order.ts).
 */
export function buildArgs(
  stamp: BuildStamp,
  outfile: string,
  target?: string,
  order: readonly string[] = [],
): string[] {
  return [
    "build",
    "--compile",
    ...(target ? [`--target=bun-${target}`] : []),
    // Request headers up to 256 KiB reach qm, whose edge answers in each API's envelope.
    "--compile-exec-argv=--max-http-header-size=262144",
    "--minify",
    "--sourcemap",
    // The code ships compiled to bytecode: a qm process starts without parsing its bundle (the
    // demo model server, which every swap of the demo models starts, is up in ~15 ms, not ~70).
    // ESM, as without it: the modules keep import.meta and their order of evaluation.
    "--bytecode",
    "--format=esm",
    ...(order.length > 0 ? [`--bytecode-order=${order.join(",")}`] : []),
    `--define=QM_BUILD_COMMIT=${JSON.stringify(stamp.shortCommit)}`,
    `--define=QM_BUILD_DATE=${JSON.stringify(stamp.date)}`,
    "src/cli/main.ts",
    "--outfile",
    outfile,
  ];
}
