/**
 * Only the tests that run the compiled binary build it, and each of them does so itself, first
 * (tests/support/binary.ts): a unit test never waits for a compile, and an integration test run
 * alone never runs a stale dist/qm.
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { binaryIsStale } from "../scripts/build.ts";

const TESTS = import.meta.dir;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : testFiles(path);
    return e.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** What the support modules export that runs dist/qm. */
const RUNS_BINARY: Record<string, string[]> = {
  "support/qm-process.ts": ["startQm", "QM"],
  "support/e2e.ts": ["serve"],
};

/** True when `text` imports something from RUNS_BINARY (an import list may span lines). */
function runsBinary(text: string): boolean {
  for (const m of text.matchAll(/^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"([^"]+)"/gm)) {
    const from = Object.keys(RUNS_BINARY).find((f) => m[2]!.endsWith(f));
    if (!from) continue;
    const names = m[1]!
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n && !n.startsWith("type "));
    if (names.some((n) => RUNS_BINARY[from]!.includes(n))) return true;
  }
  return false;
}

describe("building dist/qm for the tests", () => {
  test("a test file builds the binary first if and only if it runs it", () => {
    let running = 0;
    const wrong: string[] = [];
    for (const file of testFiles(TESTS)) {
      const text = readFileSync(file, "utf8");
      const runs = runsBinary(text);
      const builds = /^beforeAll\(needsBinary, BUILD_TIMEOUT_MS\);$/m.test(text);
      if (runs) running++;
      if (runs && !builds) wrong.push(`${relative(TESTS, file)} runs dist/qm without building it`);
      if (builds && !runs) wrong.push(`${relative(TESTS, file)} builds dist/qm but never runs it`);
    }
    expect(wrong).toEqual([]);
    // The rule must see the integration tests at all: it would hold trivially otherwise.
    expect(running).toBeGreaterThan(20);
  });

  describe("a binary is stale", () => {
    const root = mkdtempSync(join(tmpdir(), "qm-build-"));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    const at = (path: string, seconds: number) => utimesSync(join(root, path), seconds, seconds);
    mkdirSync(join(root, "src/deep"), { recursive: true });
    mkdirSync(join(root, "dist"));
    writeFileSync(join(root, "package.json"), "{}");
    writeFileSync(join(root, "src/a.ts"), "");
    writeFileSync(join(root, "src/deep/b.ts"), "");
    const fresh = () => {
      at("package.json", 1000);
      at("src/a.ts", 1000);
      at("src/deep/b.ts", 1000);
      writeFileSync(join(root, "dist/qm"), "");
      at("dist/qm", 2000);
    };

    test("when it is missing", () => {
      rmSync(join(root, "dist/qm"), { force: true });
      expect(binaryIsStale(root)).toBe(true);
    });

    test("not when it is newer than every source", () => {
      fresh();
      expect(binaryIsStale(root)).toBe(false);
    });

    test("when any file under src/, however deep, or package.json is newer", () => {
      for (const path of ["src/a.ts", "src/deep/b.ts", "package.json"]) {
        fresh();
        at(path, 3000);
        expect({ path, stale: binaryIsStale(root) }).toEqual({ path, stale: true });
      }
    });
  });
});
