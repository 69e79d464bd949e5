import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

function files(dir: string): string[] {
  return readdirSync(join(SRC, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

function imports(file: string): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  return [...text.matchAll(/^import[^"']*["']([^"']+)["']/gm)].map((m) => m[1]!);
}

/**
 * The dependency direction of STYLE.md: `shared` ← `config` ← `scheduler`/`policy` (pure) ←
 * `process`/`proxy`/`gpu`/`peers` ← `api` ← `runtime` ← `cli`. Only the runtime sees everything.
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
      shared: [
        "config",
        "scheduler",
        "policy",
        "process",
        "proxy",
        "gpu",
        "peers",
        "api",
        "runtime",
        "cli",
      ],
      config: ["scheduler", "policy", "process", "proxy", "gpu", "peers", "api", "runtime", "cli"],
      process: ["api", "runtime", "cli", "scheduler", "peers"],
      proxy: ["api", "runtime", "cli", "scheduler", "peers"],
      // Peers are reached through the proxy; nothing of the scheduler or the processes.
      peers: ["api", "runtime", "cli", "scheduler", "policy", "process", "gpu"],
      gpu: ["api", "runtime", "cli", "scheduler", "process", "proxy", "peers"],
      api: ["runtime", "cli"],
      ui: [
        "shared",
        "config",
        "scheduler",
        "policy",
        "process",
        "proxy",
        "gpu",
        "peers",
        "api",
        "runtime",
        "cli",
      ],
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

  test("the dashboard's browser code imports only itself and its three libraries", () => {
    // It is bundled for browsers (src/ui/bundle.ts): a server module pulled in would ship to
    // every page, or fail to build. The server side of src/ui (routes, bundle) stays out of it.
    const libraries = new Set(["preact", "preact/hooks", "markdown-it", "eventsource-parser"]);
    for (const file of files("ui/app")) {
      for (const spec of imports(file)) {
        const ok = spec.startsWith("./") || spec.startsWith("../") || libraries.has(spec);
        const inside =
          !spec.startsWith(".") ||
          resolve(SRC, join(file, "..", spec)).startsWith(join(SRC, "ui/app"));
        expect({ file, spec, ok: ok && inside }).toEqual({ file, spec, ok: true });
      }
    }
  });

  test("only the API layer mounts the dashboard, through its routes and the edge's open paths", () => {
    const users = [
      "api",
      "runtime",
      "cli",
      "proxy",
      "process",
      "gpu",
      "peers",
      "config",
      "shared",
    ].flatMap((layer) =>
      files(layer).flatMap((file) =>
        imports(file)
          .filter((spec) => /(^|\/)ui\//.test(spec))
          .map((spec) => `${file} → ${spec}`),
      ),
    );
    expect(users.sort()).toEqual([
      "api/app.ts → ../ui/routes.ts",
      "api/edge/gate.ts → ../../ui/paths.ts",
    ]);
  });
});
