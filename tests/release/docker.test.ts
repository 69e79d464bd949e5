/**
 * deploy/docker/Dockerfile builds from the release archive, not from source: its download
 * stage's RUN script, run here with sh against a fake release on a loopback port, installs the
 * archive for the image's architecture only after `sha256sum -c` accepts it, and fails the
 * build on a tampered archive or an architecture with no release. (Building the image itself
 * needs a Docker daemon and registry access, which tests do not have.)
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { serveFolder } from "../../scripts/release/serve-folder.ts";
import { ROOT } from "../support/qm-process.ts";
import { FAKE_VERSION, fakeRelease } from "./fake-release.ts";

const dockerfile = readFileSync(join(ROOT, "deploy/docker/Dockerfile"), "utf8");
/** Instructions with their continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, "")
  .split("\n")
  .filter((l) => l.trim() !== "" && !l.startsWith("#"));
const args = Object.fromEntries(
  instructions
    .filter((l) => l.startsWith("ARG "))
    .map((l) => {
      const [name, ...value] = l.slice(4).split("=");
      return [name!, value.join("=")];
    }),
);
const fetchScript = instructions.find((l) => l.startsWith("RUN ") && l.includes("sha256sum -c"));

const release = fakeRelease();
const good = serveFolder(release.out);
const tamperedDir = join(release.dir, "tampered");
mkdirSync(tamperedDir);
for (const f of readdirSync(release.out)) copyFileSync(join(release.out, f), join(tamperedDir, f));
copyFileSync(
  join(release.out, `qm-${FAKE_VERSION}-linux-x64-baseline.tar.gz`),
  join(tamperedDir, `qm-${FAKE_VERSION}-linux-x64.tar.gz`),
);
const tampered = serveFolder(tamperedDir);
afterAll(() => {
  good.stop();
  tampered.stop();
  rmSync(release.dir, { recursive: true, force: true });
});

/** The download stage's RUN script, in an empty WORKDIR, with the build arguments given. */
async function fetchStage(env: Record<string, string>) {
  const dir = mkdtempSync(join(release.dir, "stage-"));
  const p = Bun.spawn(["sh", "-c", fetchScript!.slice(4)], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", QM_VERSION: FAKE_VERSION, QM_PLATFORM: "", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([p.stdout.text(), p.stderr.text()]);
  return { code: await p.exited, out, err, qm: join(dir, "qm") };
}

describe("deploy/docker/Dockerfile", () => {
  test("installs a release: version and base URL are build arguments; the image copies only qm", () => {
    expect(args.QM_VERSION).toBe(pkg.version);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's variable, not JS
    expect(args.QM_BASE_URL).toEndWith("/releases/download/v${QM_VERSION}");
    expect(instructions).toContain("WORKDIR /release");
    expect(instructions).toContain("COPY --from=release /release/qm /usr/local/bin/qm");
    expect(instructions.filter((l) => l.startsWith("COPY "))).toHaveLength(1);
    expect(dockerfile).not.toMatch(/\bbun (run|build)\b/);
    expect(readFileSync(join(ROOT, "deploy/docker/Dockerfile.dockerignore"), "utf8")).toMatch(
      /^\*$/m,
    );
  });

  test.each([
    ["amd64", "", "linux-x64"],
    ["arm64", "", "linux-arm64"],
    ["amd64", "linux-x64-baseline", "linux-x64-baseline"],
  ])("TARGETARCH=%s QM_PLATFORM=%s installs the verified %s archive", async (arch, platform, want) => {
    const r = await fetchStage({
      QM_BASE_URL: `${good.url}/`,
      TARGETARCH: arch,
      QM_PLATFORM: platform,
    });
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(r.out).toBe(`qm-${FAKE_VERSION}-${want}.tar.gz: OK\nfake qm ${want} version\n`);
  });

  test("a tampered archive fails the build; no qm is left for the image", async () => {
    const r = await fetchStage({ QM_BASE_URL: tampered.url, TARGETARCH: "amd64" });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain(`qm-${FAKE_VERSION}-linux-x64.tar.gz: FAILED`);
    expect(existsSync(r.qm)).toBe(false);
  });

  test("an architecture or version with no release fails the build, saying so", async () => {
    const arch = await fetchStage({ QM_BASE_URL: good.url, TARGETARCH: "s390x" });
    expect(arch.code).not.toBe(0);
    expect(arch.err).toContain("no qm release for s390x");
    const version = await fetchStage({
      QM_BASE_URL: good.url,
      TARGETARCH: "amd64",
      QM_VERSION: "0.0.1",
    });
    expect(version.code).not.toBe(0);
    expect(existsSync(version.qm)).toBe(false);
  });
});
