import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

function files(dir: string): string[] {
  return readdirSync(join(SRC, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

function imports(file: string): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  return [...text.matchAll(/^import[^"']*["']([^"']+)["']/gm)].map((m) => m[1]!);
}

/**
 * The dependency direction of STYLE.md: `shared` ← `config` ← `scheduler`/`policy` (pure) ←
 * `process`/`proxy`/`gpu` ← `api` ← `runtime` ← `cli`. Only the runtime sees everything.
 */
describe("architecture", () => {
  test("the scheduler and the policies are pure: no I/O, timers, Bun or Elysia", () => {
    for (const file of [...files("scheduler"), ...files("policy")]) {
      for (const spec of imports(file)) {
        const ok =
          spec.startsWith("./") ||
          spec === "../config/types.ts" ||
          spec.startsWith("../shared/") ||
          spec.startsWith("../policy/") ||
          spec.startsWith("../scheduler/");
        expect({ file, spec, ok }).toEqual({ file, spec, ok: true });
      }
      const text = readFileSync(join(SRC, file), "utf8");
      // Timers, network, Bun, awaits and wall-clock time, named or merely referenced.
      for (const banned of [
        /\bsetTimeout\b/,
        /\bsetInterval\b/,
        /\bfetch\b/,
        /\bBun\./,
        /\bawait\b/,
        /\bDate\.now\b/,
      ]) {
        expect({ file, uses: String(banned), found: banned.test(text) }).toEqual({
          file,
          uses: String(banned),
          found: false,
        });
      }
    }
  });

  test("lower layers never import the layers above them", () => {
    const above: Record<string, string[]> = {
      shared: ["config", "scheduler", "policy", "process", "proxy", "gpu", "api", "runtime", "cli"],
      config: ["scheduler", "policy", "process", "proxy", "gpu", "api", "runtime", "cli"],
      process: ["api", "runtime", "cli", "scheduler"],
      proxy: ["api", "runtime", "cli", "scheduler"],
      gpu: ["api", "runtime", "cli", "scheduler", "process", "proxy"],
      api: ["runtime", "cli"],
      runtime: ["cli"],
    };
    for (const [layer, banned] of Object.entries(above)) {
      for (const file of files(layer)) {
        for (const spec of imports(file)) {
          const hit = banned.find((b) => new RegExp(`(^|/)\\.\\./(\\.\\./)*${b}/`).test(spec));
          expect({ file, spec, importsFromAbove: hit ?? null }).toEqual({
            file,
            spec,
            importsFromAbove: null,
          });
        }
      }
    }
  });
});
