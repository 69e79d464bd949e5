/**
 * install.sh against a release folder served on a loopback port (QM_INSTALL_BASE), under every
 * POSIX shell this box has (sh, dash, bash), and piped into `sh` as `curl … | sh` runs it:
 * platform detection (uname/sysctl stand-ins for other machines), the SHA-256 check against
 * SHA256SUMS (a tampered archive, sha256sum or shasum, neither), refusals that leave nothing
 * installed (unknown platform, missing tools, missing SHA256SUMS), the install folder created,
 * the example config written once, and the two commands it prints.
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { serveFolder } from "../../scripts/release/serve-folder.ts";
import { ROOT } from "../support/qm-process.ts";
import { FAKE_VERSION, fakeRelease } from "./fake-release.ts";

const SCRIPT = join(ROOT, "install.sh");
const release = fakeRelease();
const good = serveFolder(release.out);

// The same folder with linux-x64's archive replaced by another valid archive (linux-arm64's):
// what a swapped download looks like. SHA256SUMS still names the real one.
const tamperedDir = join(release.dir, "tampered");
mkdirSync(tamperedDir);
for (const f of readdirSync(release.out)) copyFileSync(join(release.out, f), join(tamperedDir, f));
copyFileSync(
  join(release.out, `qm-${FAKE_VERSION}-linux-arm64.tar.gz`),
  join(tamperedDir, `qm-${FAKE_VERSION}-linux-x64.tar.gz`),
);
const tampered = serveFolder(tamperedDir);

afterAll(() => {
  good.stop();
  tampered.stop();
  rmSync(release.dir, { recursive: true, force: true });
});

const SHELLS = ["sh", "dash", "bash"].filter((s) => Bun.which(s));

/** This machine's platform as install.sh should detect it, or null where it cannot tell. */
function hostPlatform(): string | null {
  if (process.platform !== "linux") return null;
  if (process.arch === "arm64") return "linux-arm64";
  if (process.arch !== "x64") return null;
  const flags = readFileSync("/proc/cpuinfo", "utf8")
    .split("\n")
    .find((l) => l.startsWith("flags"));
  return flags?.split(/\s+/).includes("avx2") ? "linux-x64" : "linux-x64-baseline";
}

interface Run {
  code: number;
  out: string;
  err: string;
  home: string;
  /** install.sh's TMPDIR: empty again once it has finished. */
  tmp: string;
}

/** Runs install.sh with a clean environment: PATH, HOME, TMPDIR and `env` only. */
async function install(
  opts: {
    shell?: string;
    home?: string;
    env?: Record<string, string>;
    path?: string;
    piped?: boolean;
  } = {},
): Promise<Run> {
  const home = opts.home ?? mkdtempSync(join(release.dir, "home-"));
  const tmp = mkdtempSync(join(release.dir, "tmp-"));
  const shell = opts.shell ?? "sh";
  const p = Bun.spawn(opts.piped ? [shell] : [shell, SCRIPT], {
    cwd: home,
    env: { PATH: opts.path ?? process.env.PATH ?? "", HOME: home, TMPDIR: tmp, ...opts.env },
    stdin: opts.piped ? Bun.file(SCRIPT) : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([p.stdout.text(), p.stderr.text()]);
  return { code: await p.exited, out, err, home, tmp };
}

function run(cmd: string[]): string {
  const p = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return p.stdout.toString() + p.stderr.toString();
}

/** The refusal's promise: nothing installed, no config, no temporary files left. */
function expectNothingInstalled(r: Run, dir = join(r.home, ".local/bin")): void {
  expect(r.code).not.toBe(0);
  expect(r.err).toContain("nothing installed");
  expect(existsSync(dir)).toBe(false);
  expect(existsSync(join(r.home, ".config"))).toBe(false);
  expect(readdirSync(r.tmp)).toEqual([]);
}

/** A folder of stand-ins for `uname` (and `sysctl`), put first on PATH. */
function fakeMachine(os: string, arch: string, sysctl: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(release.dir, "machine-"));
  const script = (name: string, body: string) => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  script("uname", `case "$1" in -s) echo ${os} ;; -m) echo ${arch} ;; *) exit 1 ;; esac`);
  const cases = Object.entries(sysctl)
    .map(([k, v]) => `  ${k}) echo '${v}' ;;`)
    .join("\n");
  script("sysctl", `case "$2" in\n${cases}\n  *) exit 1 ;;\nesac`);
  return `${dir}:${process.env.PATH}`;
}

/** A PATH of links to the tools install.sh uses, less those named. */
function toolsWithout(...left: string[]): string {
  const dir = mkdtempSync(join(release.dir, "tools-"));
  const tools = ["sh", "uname", "mktemp", "curl", "wget", "tar", "gzip", "awk", "grep", "cut"];
  tools.push("mkdir", "cp", "mv", "chmod", "rm", "wc", "tr", "cat", "sha256sum", "shasum");
  for (const tool of tools) {
    const path = Bun.which(tool);
    if (path && !left.includes(tool)) symlinkSync(path, join(dir, tool));
  }
  return dir;
}

const host = hostPlatform();

describe.each(SHELLS)("install.sh under %s", (shell) => {
  test.skipIf(host === null)(
    "detects this machine, creates QM_INSTALL_DIR, installs the verified qm and the example config",
    async () => {
      const home = mkdtempSync(join(release.dir, "home-"));
      const dir = join(home, "opt/qm/bin");
      const r = await install({
        shell,
        home,
        env: { QM_INSTALL_BASE: good.url, QM_INSTALL_DIR: dir },
      });
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
      const qm = join(dir, "qm");
      expect(run([qm, "version"])).toBe(`fake qm ${host} version\n`);
      expect(run(["sh", "-c", `test -x ${qm} && echo executable`])).toBe("executable\n");
      const config = join(home, ".config/quartermaster/quartermaster.toml");
      expect(readFileSync(config, "utf8")).toBe(
        readFileSync(join(ROOT, "quartermaster.toml"), "utf8"),
      );
      expect(r.out).toContain(`Installed qm-${FAKE_VERSION} (${host}) to ${qm}\n`);
      expect(r.out).toContain(`${dir} is not on your PATH`);
      expect(r.out).toEndWith(`\nNext:\n  ${qm} doctor -c ${config}\n  ${qm} serve -c ${config}\n`);
      expect(readdirSync(r.tmp)).toEqual([]);
      expect(good.requests.slice(-2)).toEqual([
        "/SHA256SUMS",
        `/qm-${FAKE_VERSION}-${host}.tar.gz`,
      ]);
    },
  );

  test("QM_INSTALL_PLATFORM picks the archive; a trailing slash on QM_INSTALL_BASE is fine", async () => {
    for (const [platform, base] of [
      ["linux-x64-baseline", `${good.url}/`],
      ["darwin-arm64", `${good.url}//`],
      ["linux-arm64", good.url],
    ] as const) {
      const r = await install({
        shell,
        env: { QM_INSTALL_BASE: base, QM_INSTALL_PLATFORM: platform },
      });
      expect({ platform, code: r.code, err: r.err }).toEqual({ platform, code: 0, err: "" });
      expect(run([join(r.home, ".local/bin/qm"), "version"])).toBe(`fake qm ${platform} version\n`);
    }
  });

  test("a tampered archive is refused: exit 1, a SHA-256 mismatch, nothing installed", async () => {
    const r = await install({
      shell,
      env: { QM_INSTALL_BASE: tampered.url, QM_INSTALL_PLATFORM: "linux-x64" },
    });
    expectNothingInstalled(r);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`SHA-256 mismatch for qm-${FAKE_VERSION}-linux-x64.tar.gz`);
  });

  test("a platform with no archive is refused, naming what the release has", async () => {
    const r = await install({
      shell,
      env: { QM_INSTALL_BASE: good.url, QM_INSTALL_PLATFORM: "linux-riscv64" },
    });
    expectNothingInstalled(r);
    expect(r.err).toContain(`no qm archive for linux-riscv64 at ${good.url} (there: qm-`);
    expect(r.err).toContain(`qm-${FAKE_VERSION}-darwin-x64.tar.gz`);
  });
});

describe("install.sh", () => {
  test.skipIf(host === null)(
    "piped into sh (curl … | sh): installs to ~/.local/bin; on PATH, the commands say plain qm",
    async () => {
      const home = mkdtempSync(join(release.dir, "piped-"));
      const bin = join(home, ".local/bin");
      const r = await install({
        piped: true,
        home,
        path: `${bin}:${process.env.PATH}`,
        env: { QM_INSTALL_BASE: `${good.url}/` },
      });
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
      expect(run([join(bin, "qm"), "version"])).toBe(`fake qm ${host} version\n`);
      const config = join(home, ".config/quartermaster/quartermaster.toml");
      expect(r.out).toEndWith(`\nNext:\n  qm doctor -c ${config}\n  qm serve -c ${config}\n`);
      expect(r.out).not.toContain("not on your PATH");
    },
  );

  test("an existing config is kept as it is, and the commands name it", async () => {
    const home = mkdtempSync(join(release.dir, "config-"));
    const config = join(home, "cfg/quartermaster/quartermaster.toml");
    mkdirSync(join(home, "cfg/quartermaster"), { recursive: true });
    writeFileSync(config, "# mine\n");
    const r = await install({
      home,
      env: {
        XDG_CONFIG_HOME: join(home, "cfg"),
        QM_INSTALL_BASE: good.url,
        QM_INSTALL_PLATFORM: "linux-arm64",
      },
    });
    expect(r.code).toBe(0);
    expect(readFileSync(config, "utf8")).toBe("# mine\n");
    expect(r.out).not.toContain("Wrote the example config");
    expect(r.out).toContain(`qm serve -c ${config}\n`);
  });

  const AVX2 = { "machdep.cpu.leaf7_features": "RDWRFSGS TSC_THREAD_OFFSET AVX2 BMI2" };
  test.each([
    ["Linux", "aarch64", "linux-arm64", {}],
    ["Linux", "arm64", "linux-arm64", {}],
    ["Darwin", "arm64", "darwin-arm64", {}],
    // A shell under Rosetta 2 on Apple Silicon: the native build.
    ["Darwin", "x86_64", "darwin-arm64", { "sysctl.proc_translated": "1", ...AVX2 }],
    ["Darwin", "x86_64", "darwin-x64", AVX2],
  ] as const)("detects %s %s as %s", async (os, arch, expected, sysctl) => {
    const r = await install({
      path: fakeMachine(os, arch, sysctl),
      env: { QM_INSTALL_BASE: good.url },
    });
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(run([join(r.home, ".local/bin/qm"), "version"])).toBe(`fake qm ${expected} version\n`);
  });

  test.each([
    ["FreeBSD", "amd64", "freebsd-x64", {}],
    // No AVX2 and no baseline build for macOS: refused rather than a binary that cannot run.
    ["Darwin", "x86_64", "darwin-x64-baseline", { "machdep.cpu.leaf7_features": "SMEP ERMS" }],
  ] as const)("refuses %s %s (%s: no archive)", async (os, arch, platform, sysctl) => {
    const r = await install({
      path: fakeMachine(os, arch, sysctl),
      env: { QM_INSTALL_BASE: good.url },
    });
    expectNothingInstalled(r);
    expect(r.err).toContain(`no qm archive for ${platform} at`);
  });

  test("a QM_INSTALL_PLATFORM that is not OS-ARCH is refused", async () => {
    const r = await install({ env: { QM_INSTALL_BASE: good.url, QM_INSTALL_PLATFORM: "x64" } });
    expect(r.code).toBe(1);
    expect(r.err).toContain("QM_INSTALL_PLATFORM must be OS-ARCH");
    expect(existsSync(join(r.home, ".local"))).toBe(false);
  });

  test("a release folder without SHA256SUMS installs nothing", async () => {
    const empty = serveFolder(mkdtempSync(join(release.dir, "empty-")));
    try {
      const r = await install({
        env: { QM_INSTALL_BASE: empty.url, QM_INSTALL_PLATFORM: "linux-x64" },
      });
      expect(r.code).toBe(1);
      expect(r.err).toContain(`could not download ${empty.url}/SHA256SUMS`);
      expect(existsSync(join(r.home, ".local"))).toBe(false);
    } finally {
      empty.stop();
    }
  });

  test.skipIf(!Bun.which("shasum"))(
    "without sha256sum it verifies with shasum: the good archive installs, the tampered one does not",
    async () => {
      const path = toolsWithout("sha256sum");
      const ok = await install({
        path,
        env: { QM_INSTALL_BASE: good.url, QM_INSTALL_PLATFORM: "linux-x64" },
      });
      expect({ code: ok.code, err: ok.err }).toEqual({ code: 0, err: "" });
      const bad = await install({
        path,
        env: { QM_INSTALL_BASE: tampered.url, QM_INSTALL_PLATFORM: "linux-x64" },
      });
      expectNothingInstalled(bad);
      expect(bad.err).toContain("SHA-256 mismatch");
    },
  );

  test("with neither sha256sum nor shasum it refuses rather than install unverified", async () => {
    const r = await install({
      path: toolsWithout("sha256sum", "shasum"),
      env: { QM_INSTALL_BASE: good.url, QM_INSTALL_PLATFORM: "linux-x64" },
    });
    expectNothingInstalled(r);
    expect(r.err).toContain("needs sha256sum or shasum");
  });

  test.skipIf(!Bun.which("wget"))("without curl it downloads with wget", async () => {
    const r = await install({
      path: toolsWithout("curl"),
      env: { QM_INSTALL_BASE: good.url, QM_INSTALL_PLATFORM: "darwin-x64" },
    });
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(run([join(r.home, ".local/bin/qm"), "version"])).toBe("fake qm darwin-x64 version\n");
  });

  test.skipIf(!Bun.which("shellcheck"))(
    "shellcheck finds nothing in it as POSIX sh or dash (skipped without shellcheck)",
    () => {
      for (const dialect of ["sh", "dash"]) {
        const p = Bun.spawnSync(["shellcheck", "-s", dialect, SCRIPT]);
        expect({ dialect, out: p.stdout.toString(), code: p.exitCode }).toEqual({
          dialect,
          out: "",
          code: 0,
        });
      }
    },
  );
});
