/**
 * The GitHub workflows are valid and do what docs/release.md says: actionlint (built from the
 * Go module proxy by .ci/run; skipped without it) checks both, and their structure is read with
 * a YAML parser: CI runs .ci/run; a `v*` tag builds, tests (with the release step required) and
 * publishes the release folder.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { ROOT } from "../support/qm-process.ts";

// biome-ignore lint/suspicious/noExplicitAny: workflows are read as loose YAML
type Obj = Record<string, any>;

const FILES = ["ci.yml", "release.yml"].map((f) => join(ROOT, ".github/workflows", f));
const [ci, release] = FILES.map((f) => parse(readFileSync(f, "utf8")) as Obj) as [Obj, Obj];

/** actionlint on PATH, else where `go install` puts it. */
function findActionlint(): string | null {
  const onPath = Bun.which("actionlint");
  if (onPath) return onPath;
  if (!Bun.which("go")) return null;
  const gopath = Bun.spawnSync(["go", "env", "GOPATH"]).stdout.toString().trim();
  const bin = join(gopath, "bin/actionlint");
  return gopath && existsSync(bin) ? bin : null;
}
const actionlint = findActionlint();

function steps(workflow: Obj): Obj[] {
  return Object.values(workflow.jobs as Obj).flatMap((job: Obj) => job.steps as Obj[]);
}

describe.skipIf(!actionlint)(
  "actionlint (skipped without actionlint: .ci/run installs it with Go)",
  () => {
    test("finds nothing in ci.yml and release.yml", () => {
      const p = Bun.spawnSync([actionlint!, "-no-color", ...FILES], { cwd: ROOT });
      expect({ code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() }).toEqual({
        code: 0,
        out: "",
      });
    });

    test("does find a broken workflow (the check can fail)", () => {
      const dir = mkdtempSync(join(tmpdir(), "qm-actionlint-"));
      try {
        const file = join(dir, "broken.yml");
        writeFileSync(
          file,
          "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo hi\n        shell: bash\n        timeout: 5\n",
        );
        const p = Bun.spawnSync([actionlint!, "-no-color", file]);
        expect(p.exitCode).toBe(1);
        expect(p.stdout.toString()).toContain("timeout");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);

describe("ci.yml", () => {
  test("runs .ci/run on pushes to main and on pull requests, with read-only permissions", () => {
    expect(Object.keys(ci.on)).toEqual(expect.arrayContaining(["push", "pull_request"]));
    expect(ci.on.push.branches).toEqual(["main"]);
    expect(ci.permissions).toEqual({ contents: "read" });
    expect(steps(ci).map((s) => s.run)).toContain("bash .ci/run");
  });
});

describe("release.yml", () => {
  const all = steps(release);
  test("runs on v* tags only, and may write releases", () => {
    expect(release.on).toEqual({ push: { tags: ["v*"] } });
    expect(release.permissions).toEqual({ contents: "write" });
  });

  test("refuses a tag that is not v + package.json's version", () => {
    const check = all.find((s) => /GITHUB_REF_NAME/.test(s.run ?? ""));
    expect(check?.run).toContain('require("./package.json").version');
    expect(check?.run).toContain("exit 1");
  });

  test("builds and tests with .ci/run, its release step required, before publishing", () => {
    const build = all.findIndex((s) => s.run === "bash .ci/run");
    const publish = all.findIndex((s) => String(s.uses).startsWith("softprops/action-gh-release@"));
    expect(build).toBeGreaterThan(-1);
    expect(all[build]!.env).toEqual({ QM_CI_RELEASE: "required" });
    expect(publish).toBeGreaterThan(build);
    expect(String(all[publish]!.with.files).trim().split("\n")).toEqual([
      "dist/release/*.tar.gz",
      "dist/release/SHA256SUMS",
      "dist/release/manifest.json",
      "dist/release/install.sh",
    ]);
    expect(all[publish]!.with.fail_on_unmatched_files).toBe(true);
  });

  test("publishes install.sh set to this repository's releases", () => {
    const stamp = all.find((s) => /dist\/release\/install\.sh/.test(s.run ?? ""));
    expect(stamp?.run).toContain("s|^QM_REPO=.*|QM_REPO=$GITHUB_REPOSITORY|");
    expect(readFileSync(join(ROOT, "install.sh"), "utf8")).toMatch(/^QM_REPO=\S+$/m);
  });
});
