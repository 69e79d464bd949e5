/** `qm doctor`'s database check, on real files: one that opens, a damaged one, [store] off. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DoctorCheck } from "../../src/cli/doctor/check.ts";
import { DOCTOR_CHECKS } from "../../src/cli/doctor/checks.ts";
import { doctorCommand } from "../../src/cli/doctor/command.ts";
import { realDeps } from "../../src/cli/doctor/deps.ts";

const dir = mkdtempSync(join(tmpdir(), "qm-doctor-db-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const only: DoctorCheck[] = DOCTOR_CHECKS.filter((c) => c.id === "database");

async function doctor(toml: string) {
  const path = join(dir, `c${Math.random()}.toml`);
  writeFileSync(path, toml);
  let out = "";
  const code = await doctorCommand(["-c", path], {
    out: (t) => {
      out += t;
    },
    deps: realDeps,
    checks: only,
  });
  return { code, out: out.replaceAll(dir, "DIR") };
}

describe("the database check", () => {
  test("a new database opens: passed, with what it holds", async () => {
    const r = await doctor(`[server]\nstate_dir = "${dir}/fresh"\n`);
    expect(r).toEqual({
      code: 0,
      out: "✓ database: DIR/fresh/qm.db: 0 stored response(s), 0 request record(s), 0.0 MB of 256 MB\nall 1 checks passed\n",
    });
  });

  test("a damaged file: failed, saying qm would run on memory only, with the fix", async () => {
    mkdirSync(join(dir, "broken"));
    writeFileSync(join(dir, "broken", "qm.db"), "not a database ".repeat(512));
    const r = await doctor(`[server]\nstate_dir = "${dir}/broken"\n`);
    expect(r.code).toBe(1);
    expect(r.out).toContain(
      "✗ database: DIR/broken/qm.db: the file is not an SQLite database (damaged, or another program's): qm would run with memory only",
    );
    expect(r.out).toContain("fix: make server.state_dir writable, or move the damaged qm.db aside");
  });

  test("[store] off: a note", async () => {
    const r = await doctor(`[store]\nenabled = false\n`);
    expect(r.code).toBe(0);
    expect(r.out).toContain("• database: [store] enabled = false: nothing outlasts a restart");
  });
});
