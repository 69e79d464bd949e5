/**
 * `execSelf` on Linux: the process replaced by its own command line run again, the same pid,
 * the added variables in its environment; and the ways it declines without replacing anything.
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { linuxPlatform, programPath } from "../../src/platform/linux/index.ts";
import { execProgram } from "../../src/platform/linux/libc.ts";

const linux = process.platform === "linux";
const dir = mkdtempSync(join(tmpdir(), "qm-exec-self-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PLATFORM = resolve(import.meta.dir, "../../src/platform/linux/index.ts");

describe.skipIf(!linux)("execSelf", () => {
  test("runs the same command line again in the same process, with the variable added", async () => {
    const script = join(dir, "again.ts");
    writeFileSync(
      script,
      `import { linuxPlatform } from ${JSON.stringify(PLATFORM)};
if (process.env.QM_TEST_AGAIN === undefined) {
  const why = linuxPlatform().execSelf({ QM_TEST_AGAIN: "yes" });
  console.log(JSON.stringify({ failed: why }));
} else {
  const comm = (await Bun.file("/proc/self/comm").text()).trim();
  console.log(JSON.stringify({ pid: process.pid, comm, args: process.argv.slice(2), again: process.env.QM_TEST_AGAIN, kept: process.env.QM_TEST_KEPT }));
}
`,
    );
    const proc = Bun.spawn([process.execPath, script, "one", "two words"], {
      env: { ...process.env, QM_TEST_KEPT: "kept" },
      stdout: "pipe",
      stderr: "inherit",
    });
    const out = JSON.parse((await proc.stdout.text()).trim()) as Record<string, unknown>;
    expect(await proc.exited).toBe(0);
    // What the kernel names a process started from that file (15 characters at most).
    const name = basename(process.execPath).slice(0, 15);
    expect(out).toEqual({
      pid: proc.pid,
      // The name it was started by (ps, the port-holder messages), not "exe".
      comm: name,
      args: ["one", "two words"],
      again: "yes",
      kept: "kept",
    });
  });

  test("the program is run again by the name it was started by, while that is still the same file", () => {
    const root = mkdtempSync(join(dir, "proc-"));
    mkdirSync(join(root, "self"));
    const bin = join(dir, "qm-linux-x64");
    const other = join(dir, "other");
    writeFileSync(bin, "");
    writeFileSync(other, "");
    const link = join(dir, "qm");
    symlinkSync(bin, link);
    symlinkSync(bin, join(root, "self/exe"));
    // Started as a path (a symlink's name kept), or as a name on PATH.
    expect(programPath(root, link)).toBe(link);
    const onPath = mkdtempSync(join(dir, "bin-"));
    chmodSync(bin, 0o755);
    linkSync(bin, join(onPath, "qm-by-name"));
    const path = process.env.PATH;
    process.env.PATH = `${onPath}:${path ?? ""}`;
    try {
      expect(programPath(root, "qm-by-name")).toBe(join(onPath, "qm-by-name"));
    } finally {
      process.env.PATH = path;
    }
    // A name that is another file now, or none: the link's target.
    expect(programPath(root, other)).toBe(bin);
    expect(programPath(root, "no-such-command-anywhere")).toBe(bin);
    // The file gone from under its name: the kernel's link to it.
    rmSync(bin);
    expect(programPath(root, link)).toBe(join(root, "self/exe"));
  });

  test("without its command line it declines, and this process goes on", () => {
    const root = mkdtempSync(join(dir, "proc-"));
    expect(linuxPlatform({ root }).execSelf({ X: "1" })).toBe(`cannot read ${root}/self/cmdline`);
  });

  test("a program that cannot run is a failure with its reason, not an exit", () => {
    expect(execProgram(join(dir, "no-such-program"), ["x"], [])).toBe("execve failed (ENOENT)");
    const notElf = join(dir, "not-a-program");
    writeFileSync(notElf, "plain text\n", { mode: 0o644 });
    expect(execProgram(notElf, ["x"], [])).toBe("execve failed (EACCES)");
  });
});
