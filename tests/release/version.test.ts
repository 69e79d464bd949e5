/**
 * `qm version` names the commit and date a binary was built from: the stamp (pure, with git
 * and the clock injected), `--define` in the build arguments, a run from source ("unknown"),
 * and a real `npm run release` for this machine's target, whose binary and manifest must name
 * HEAD. The other targets need Bun runtimes from npm and a minute: .ci/run's release step.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import {
  buildArgs,
  buildStamp,
  type Git,
  git,
  gitRunner,
} from "../../scripts/release/build-args.ts";
import { sha256, TARGETS } from "../../scripts/release/pack.ts";
import { versionLine } from "../../src/version.ts";
import { ROOT } from "../support/qm-process.ts";

const SHA = "89abcdef0123456789abcdef0123456789abcdef";
const fakeGit: Git = (args) =>
  args[0] === "rev-parse" && args[1] === "--verify"
    ? SHA
    : args[1] === "--short"
      ? "89abcde"
      : undefined;
const NOON = Date.UTC(2026, 11, 4, 12, 0, 0);

describe("build stamp", () => {
  test("the commit from git, the date from the clock (UTC)", () => {
    expect(buildStamp({ cwd: ROOT, run: fakeGit, env: {}, now: () => NOON })).toEqual({
      version: pkg.version,
      commit: SHA,
      shortCommit: "89abcde",
      date: "2026-12-04",
      epochS: NOON / 1000,
    });
  });

  test("SOURCE_DATE_EPOCH, when set, is the build's time; a malformed one is ignored", () => {
    const at = (v: string) =>
      buildStamp({ cwd: ROOT, run: fakeGit, env: { SOURCE_DATE_EPOCH: v }, now: () => NOON });
    expect(at("0")).toMatchObject({ date: "1970-01-01", epochS: 0 });
    expect(at("1700000000")).toMatchObject({ date: "2023-11-14", epochS: 1_700_000_000 });
    expect(at("yesterday")).toMatchObject({ date: "2026-12-04", epochS: NOON / 1000 });
    expect(at("")).toMatchObject({ date: "2026-12-04", epochS: NOON / 1000 });
    expect(at("-5")).toMatchObject({ date: "2026-12-04", epochS: NOON / 1000 });
  });

  test("outside a git checkout (real git, a folder outside any repository): unknown", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-no-git-"));
    try {
      expect(git(["rev-parse", "--verify", "HEAD"], dir)).toBeUndefined();
      expect(buildStamp({ cwd: dir, env: {} })).toMatchObject({
        commit: "unknown",
        shortCommit: "unknown",
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("without git at all: unknown, not a crash", () => {
    const run = gitRunner(join(ROOT, "no-such-git"));
    expect(run(["rev-parse", "--verify", "HEAD"], ROOT)).toBeUndefined();
    expect(buildStamp({ cwd: ROOT, env: {}, run }).commit).toBe("unknown");
  });

  test("the build defines the short commit and the date as string literals, for the target asked", () => {
    const stamp = buildStamp({ cwd: ROOT, run: fakeGit, env: {}, now: () => NOON });
    const args = buildArgs(stamp, "out/qm", "linux-arm64");
    expect(args).toContain('--define=QM_BUILD_COMMIT="89abcde"');
    expect(args).toContain('--define=QM_BUILD_DATE="2026-12-04"');
    expect(args).toContain("--target=bun-linux-arm64");
    expect(args.slice(-3)).toEqual(["src/cli/main.ts", "--outfile", "out/qm"]);
    expect(buildArgs(stamp, "dist/qm").some((a) => a.startsWith("--target"))).toBe(false);
  });

  test("the code ships as ESM bytecode, laid out by the records it is given", () => {
    const stamp = buildStamp({ cwd: ROOT, run: fakeGit, env: {}, now: () => NOON });
    const plain = buildArgs(stamp, "out/qm");
    expect(plain).toContain("--bytecode");
    expect(plain).toContain("--format=esm");
    expect(plain.some((a) => a.startsWith("--bytecode-order"))).toBe(false);
    const ordered = buildArgs(stamp, "out/qm", "linux-arm64", ["/r/serve.order", "/r/demo.order"]);
    expect(ordered).toContain("--bytecode-order=/r/serve.order,/r/demo.order");
    expect(ordered.slice(-3)).toEqual(["src/cli/main.ts", "--outfile", "out/qm"]);
  });
});

test("from source, qm version says the commit and date are unknown", () => {
  expect(versionLine("1.2.3")).toBe(`qm ${pkg.version} (commit unknown, built unknown; bun 1.2.3)`);
  const p = Bun.spawnSync([process.execPath, "src/cli/main.ts", "version"], { cwd: ROOT });
  expect(p.stdout.toString()).toBe(`${versionLine()}\n`);
});

const host = TARGETS.find((t) => `${t.os}-${t.arch}` === `${process.platform}-${process.arch}`);
const head = git(["rev-parse", "--verify", "HEAD"], ROOT);

describe.skipIf(!host || !head)("npm run release, this machine's target only", () => {
  const out = mkdtempSync(join(tmpdir(), "qm-release-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  const platform = `${host?.os}-${host?.arch}`;
  const stem = `qm-${pkg.version}-${platform}`;

  test("writes the archive, SHA256SUMS and a manifest naming HEAD; its qm version names HEAD and today", () => {
    const dayBefore = new Date().toISOString().slice(0, 10);
    const build = Bun.spawnSync(
      [process.execPath, "scripts/release.ts", "--targets", platform, "--out", out],
      {
        cwd: ROOT,
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, SOURCE_DATE_EPOCH: "" } /* the clock, not a caller's epoch */,
      },
    );
    expect({ code: build.exitCode, err: build.exitCode ? build.stderr.toString() : "" }).toEqual({
      code: 0,
      err: "",
    });
    const dayAfter = new Date().toISOString().slice(0, 10);
    const file = `${stem}.tar.gz`;
    const bytes = readFileSync(join(out, file));
    expect(JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"))).toEqual({
      version: pkg.version,
      commit: head,
      assets: [
        {
          os: host?.os,
          arch: host?.arch,
          file,
          sha256: sha256(bytes),
          size: statSync(join(out, file)).size,
        },
      ],
    });
    expect(readFileSync(join(out, "SHA256SUMS"), "utf8")).toBe(`${sha256(bytes)}  ${file}\n`);
    expect(Bun.spawnSync(["tar", "-xzf", file], { cwd: out }).exitCode).toBe(0);
    const version = Bun.spawnSync([join(out, stem, "qm"), "version"]).stdout.toString();
    const short = git(["rev-parse", "--short", "HEAD"], ROOT);
    expect(
      [dayBefore, dayAfter].map(
        (d) => `qm ${pkg.version} (commit ${short}, built ${d}; bun ${Bun.version})\n`,
      ),
    ).toContain(version);
  }, 120_000);

  test("an unknown target is refused, naming the targets", () => {
    const p = Bun.spawnSync(
      [process.execPath, "scripts/release.ts", "--targets", "windows-x64", "--out", join(out, "x")],
      { cwd: ROOT, stderr: "pipe" },
    );
    expect(p.exitCode).not.toBe(0);
    expect(p.stderr.toString()).toContain(
      "unknown target windows-x64; targets: linux-x64, linux-x64-baseline, linux-arm64, darwin-arm64, darwin-x64",
    );
  });
});
