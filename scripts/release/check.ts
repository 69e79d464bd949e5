/**
 * `npm run release:check [-- --no-build] [--require-qemu]`: builds the release folder
 * (`npm run release`) and checks it as a user meets it — .ci/run's release step:
 * - manifest.json lists the five targets with the right sizes and SHA-256s, the version of
 *   package.json and the commit of HEAD; SHA256SUMS agrees and `sha256sum -c` passes;
 * - every archive holds `qm-VERSION-OS-ARCH/` with `qm` (executable), LICENSE, README.md and
 *   quartermaster.toml, read by the system's `tar`;
 * - install.sh, served the folder over loopback HTTP, installs this machine's build, whose
 *   `qm version` names the commit, and the linux-arm64 one;
 * - the linux-arm64 qm runs under qemu user emulation (`qemu-aarch64 -L /usr/aarch64-linux-gnu`):
 *   `qm version`, then `qm serve` on a demo config whose model command runs qm's demo model
 *   server through qemu too, answering a chat. Without qemu this part is skipped, saying why
 *   (`--require-qemu` makes that a failure).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { alive, startQm } from "../../tests/support/qm-process.ts";
import { git } from "./build-args.ts";
import { machoSignature } from "./macho.ts";
import { type Manifest, platform, sha256, TARGETS } from "./pack.ts";
import { serveFolder } from "./serve-folder.ts";

const root = resolve(import.meta.dir, "../..");
const outDir = join(root, "dist/release");
const { values } = parseArgs({
  options: {
    "no-build": { type: "boolean", default: false },
    "require-qemu": { type: "boolean", default: false },
  },
});
const QEMU_ROOT = "/usr/aarch64-linux-gnu";
const QEMU = ["qemu-aarch64", "-L", QEMU_ROOT];
const started = performance.now();

function check(ok: unknown, what: string, detail = ""): void {
  if (!ok) throw new Error(`release check: ${what}${detail ? `\n${detail}` : ""}`);
  process.stderr.write(`release check: ok  ${what}\n`);
}

async function run(cmd: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn(cmd, {
    cwd: root,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([p.stdout.text(), p.stderr.text()]);
  return { code: await p.exited, out, err };
}

if (!values["no-build"]) {
  const build = Bun.spawnSync([process.execPath, "scripts/release.ts"], {
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
  });
  check(build.exitCode === 0, "npm run release built dist/release");
}

const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
const commit = git(["rev-parse", "--verify", "HEAD"], root) ?? "unknown";
const short = git(["rev-parse", "--short", "HEAD"], root) ?? "unknown";
const manifest = JSON.parse(readFileSync(join(outDir, "manifest.json"), "utf8")) as Manifest;
check(
  manifest.version === pkg.version && manifest.commit === commit,
  `manifest.json: version ${manifest.version}, commit ${manifest.commit}`,
);
check(
  JSON.stringify(manifest.assets.map((a) => `${a.os}-${a.arch}`)) ===
    JSON.stringify(TARGETS.map(platform)),
  `manifest.json lists ${TARGETS.map(platform).join(", ")}`,
);
for (const a of manifest.assets) {
  const path = join(outDir, a.file);
  check(
    a.file === `qm-${pkg.version}-${a.os}-${a.arch}.tar.gz` &&
      statSync(path).size === a.size &&
      sha256(readFileSync(path)) === a.sha256,
    `${a.file}: size and SHA-256 as the manifest says`,
  );
  const list = await run(["tar", "-tvzf", path]);
  const stem = a.file.replace(/\.tar\.gz$/, "");
  const names = list.out
    .trim()
    .split("\n")
    .map((l) => l.split(/\s+/).at(-1));
  check(
    list.code === 0 &&
      JSON.stringify(names) ===
        JSON.stringify([
          `${stem}/`,
          `${stem}/qm`,
          `${stem}/LICENSE`,
          `${stem}/README.md`,
          `${stem}/quartermaster.toml`,
        ]) &&
      /^-rwxr-xr-x/.test(list.out.split("\n")[1] ?? ""),
    `${a.file} holds ${stem}/ with an executable qm, LICENSE, README.md, quartermaster.toml`,
  );
}
// Apple Silicon runs no unsigned arm64 code: the macOS binaries must carry Bun's signature.
for (const a of manifest.assets.filter((x) => x.os === "darwin")) {
  const stem = a.file.replace(/\.tar\.gz$/, "");
  const dir = mkdtempSync(join(tmpdir(), "qm-release-darwin-"));
  try {
    await run(["tar", "-xzf", join(outDir, a.file), "-C", dir]);
    const signature = machoSignature(readFileSync(join(dir, stem, "qm")));
    check(signature === "signed", `${stem}/qm is a signed Mach-O executable (${signature})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const sums = readFileSync(join(outDir, "SHA256SUMS"), "utf8");
check(
  sums ===
    [...manifest.assets]
      .sort((a, b) => (a.file < b.file ? -1 : 1))
      .map((a) => `${a.sha256}  ${a.file}\n`)
      .join(""),
  "SHA256SUMS has one line per archive, as the manifest says",
);
const verify = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: outDir });
check(verify.exitCode === 0, "sha256sum -c SHA256SUMS");

const tmp = mkdtempSync(join(tmpdir(), "qm-release-check-"));
const server = serveFolder(outDir);
const expectVersion = (out: string) =>
  new RegExp(
    `^qm ${pkg.version.replaceAll(".", "\\.")} \\(commit ${short}, built \\d{4}-\\d\\d-\\d\\d; bun \\d+\\.\\d+\\.\\d+\\)\\n$`,
  ).test(out);
try {
  const host = `${process.platform}-${process.arch}`;
  if (TARGETS.some((t) => platform(t) === host)) {
    const dir = join(tmp, "host/bin");
    const install = await run(["sh", "install.sh"], {
      HOME: join(tmp, "host"),
      XDG_CONFIG_HOME: join(tmp, "host/config"),
      QM_INSTALL_BASE: server.url,
      QM_INSTALL_DIR: dir,
    });
    check(
      install.code === 0,
      "install.sh installed this machine's build",
      install.out + install.err,
    );
    const version = await run([join(dir, "qm"), "version"]);
    check(expectVersion(version.out), `installed qm version → ${version.out.trim()}`);
  }

  const armDir = join(tmp, "arm64/bin");
  const armInstall = await run(["dash", "install.sh"], {
    HOME: join(tmp, "arm64"),
    QM_INSTALL_BASE: `${server.url}/`,
    QM_INSTALL_DIR: armDir,
    QM_INSTALL_PLATFORM: "linux-arm64",
  });
  check(
    armInstall.code === 0,
    "install.sh (dash) installed linux-arm64 by QM_INSTALL_PLATFORM",
    armInstall.out + armInstall.err,
  );
  const arm = join(armDir, "qm");

  const why = !Bun.which("qemu-aarch64")
    ? "qemu-aarch64 is not installed (Debian: qemu-user)"
    : !existsSync(join(QEMU_ROOT, "lib/ld-linux-aarch64.so.1"))
      ? `${QEMU_ROOT} has no arm64 C library (Debian: libc6-arm64-cross)`
      : null;
  if (why !== null) {
    if (values["require-qemu"]) throw new Error(`release check: linux-arm64 under qemu: ${why}`);
    process.stderr.write(`release check: skip  linux-arm64 under qemu: ${why}\n`);
  } else {
    const version = await run([...QEMU, arm, "version"]);
    check(expectVersion(version.out), `qemu-aarch64 … qm version → ${version.out.trim()}`);
    await armServes(arm);
  }
} finally {
  server.stop();
  rmSync(tmp, { recursive: true, force: true });
}
process.stderr.write(
  `release check: passed in ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
);
// startQm's start timeout stays armed after qm started; the check is done.
process.exit(0);

/**
 * The arm64 qm serves a chat under emulation. Its model command names qemu itself, so this
 * works on a box without binfmt_misc; the demo model server is the arm64 qm too (`${QM_BIN}`).
 * Under qemu, qm cannot become a child subreaper (qemu does not pass that prctl through); it
 * says so and still stops its model.
 */
async function armServes(arm: string): Promise<void> {
  const config = join(tmp, "arm64/demo.toml");
  writeFileSync(
    config,
    `[server]
listen = ["127.0.0.1:0"]
start_port = ${20000 + Math.floor(Math.random() * 20000)}
state_dir = ${JSON.stringify(join(tmp, "arm64/state"))}
health_check_timeout_s = 300

[models.demo-chat]
cmd = "${QEMU.join(" ")} \${QM_BIN} demo-upstream --port \${PORT} --name \${MODEL_ID} --tokens 5"
`,
  );
  const qm = await startQm(config, {}, { command: [...QEMU, arm], timeoutMs: 180_000 });
  let pids: number[] = [];
  try {
    const res = await fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "demo-chat", messages: [{ role: "user", content: "hi" }] }),
      signal: AbortSignal.timeout(300_000),
    });
    const body = (await res.json()) as { choices?: { message?: { content?: string } }[] };
    const text = body.choices?.[0]?.message?.content ?? "";
    check(
      res.status === 200 && res.headers.get("x-qm-model") === "demo-chat" && text.length > 0,
      `the arm64 qm answered a chat through its arm64 demo model: "${text}"`,
    );
    const status = (await (await fetch(`${qm.url}/api/status`)).json()) as {
      models: { pid: number | null }[];
    };
    pids = status.models.map((m) => m.pid).filter((p): p is number => p !== null);
  } finally {
    const code = await qm.stop("SIGTERM");
    check(code === 0, `arm64 qm: SIGTERM → exit ${code}`);
  }
  check(pids.length > 0 && pids.every((p) => !alive(p)), "no model process outlives the arm64 qm");
}
