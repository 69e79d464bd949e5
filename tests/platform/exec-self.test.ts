/**
 * `execSelf` on Linux: the process replaced by its own command line run again, the same pid,
 * the added variables in its environment; and the ways it declines without replacing anything.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { linuxPlatform } from "../../src/platform/linux/index.ts";
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
  console.log(JSON.stringify({ pid: process.pid, args: process.argv.slice(2), again: process.env.QM_TEST_AGAIN, kept: process.env.QM_TEST_KEPT }));
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
    expect(out).toEqual({
      pid: proc.pid,
      args: ["one", "two words"],
      again: "yes",
      kept: "kept",
    });
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
