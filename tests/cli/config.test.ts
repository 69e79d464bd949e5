/**
 * `qm config schema` and `qm config check` through the compiled binary, on the files the
 * repository ships.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

function qm(...args: string[]) {
  const run = Bun.spawnSync([QM, ...args], { cwd: ROOT, env: { ...process.env, QM_CONFIG: "" } });
  return { code: run.exitCode, out: run.stdout.toString(), err: run.stderr.toString() };
}

const SHIPPED = join(ROOT, "quartermaster.toml");

describe("qm config schema", () => {
  test("prints the JSON Schema that ships as docs/quartermaster.schema.json", () => {
    const run = qm("config", "schema");
    expect(run.code).toBe(0);
    expect(run.err).toBe("");
    expect(run.out).toBe(readFileSync(join(ROOT, "docs/quartermaster.schema.json"), "utf8"));
    const schema = JSON.parse(run.out) as { title: string; properties: Record<string, unknown> };
    expect(schema.title).toBe("quartermaster.toml");
    expect(Object.keys(schema.properties)).toContain("models");
  });

  test("is named in qm --help and explained by qm config --help", () => {
    expect(qm("--help").out).toContain("config schema");
    const help = qm("config", "--help");
    expect(help.code).toBe(0);
    expect(help.out).toContain("qm config schema");
    expect(qm("config", "schema", "--help").out).toBe(help.out);
  });

  test("an unknown config command or option is a usage error (exit 2)", () => {
    expect(qm("config", "scheme").code).toBe(2);
    expect(qm("config", "schema", "--out", "x").code).toBe(2);
  });
});

describe("the shipped quartermaster.toml", () => {
  test("starts with taplo's #:schema directive, pointing at the shipped schema", () => {
    const first = readFileSync(SHIPPED, "utf8").split("\n")[0]!;
    const directive = /^#:schema (\S+)$/.exec(first);
    expect(directive?.[1]).toBe("./docs/quartermaster.schema.json");
    // Taplo resolves the path against the TOML file's own directory.
    expect(existsSync(join(dirname(SHIPPED), directive![1]!))).toBe(true);
  });

  test("qm config check accepts it, directive and all", () => {
    const run = qm("config", "check", "-c", SHIPPED);
    expect(run).toEqual({ code: 0, out: `${SHIPPED}: ok (3 models)\n`, err: "" });
  });
});

describe("qm config check", () => {
  test("a missing file is a plain sentence, for check and serve alike (exit 1)", () => {
    const missing = join(tmpdir(), "qm-no-such-dir", "quartermaster.toml");
    const sentence = `${missing}: no such config file (-c FILE or $QM_CONFIG names another; the quartermaster.toml shipped with qm is an example to start from)\n`;
    expect(qm("config", "check", "-c", missing)).toEqual({ code: 1, out: "", err: sentence });
    expect(qm("serve", "-c", missing)).toEqual({ code: 1, out: "", err: sentence });
  });

  test("warns, and still says ok, when a model's program cannot be found", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-check-"));
    try {
      const file = join(dir, "q.toml");
      writeFileSync(
        file,
        [
          "[models.a]",
          `cmd = "qm-no-such-server --port \${PORT}"`,
          "[models.b]",
          `cmd = "${join(dir, "missing")} --port \${PORT}"`,
          "[models.c]",
          'cmd = "sh -c true"',
          "[models.d]",
          'cmd = "sh -c true"',
          'env = { PATH = "/nowhere" }',
          "",
        ].join("\n"),
      );
      const run = qm("config", "check", "-c", file);
      expect(run.code).toBe(0);
      expect(run.out).toBe(`${file}: ok (4 models, 3 warnings)\n`);
      expect(run.err.split("\n")).toEqual([
        `${file}: warning: models.a.cmd: "qm-no-such-server" was not found on PATH; the model cannot start (install it, or give its full path)`,
        `${file}: warning: models.b.cmd: "${join(dir, "missing")}" is not an executable file; the model cannot start`,
        `${file}: warning: models.d.cmd: "sh" was not found on PATH; the model cannot start (install it, or give its full path)`,
        "",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
