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

  /**
   * One way to wait (src/shared/timer.ts): every timer, delay, interval and timed abort goes
   * through the injected `Timers`, so tests move a fake clock and assert the order of events
   * instead of elapsed time. Outside shared/timer.ts only demo/ (a separate fake model process,
   * whose delays are the model's own real time) and ui/ (the dashboard, in the browser) arm
   * timers themselves, and the files below, each for the reason given. An entry that no longer
   * applies must leave the list.
   */
  test("one way to wait: no raw setTimeout, setInterval or AbortSignal.timeout outside shared/timer.ts", () => {
    const exceptions: Record<string, string> = {
      "api/control/routes.ts":
        "the event feeds' keep-alive comment every 15 s: nothing waits on it and no test counts it",
      "api/anthropic/count-tokens.ts": "a fixed 10 s limit on the upstream's count_tokens call",
      "api/anthropic/upstream.ts": "a fixed limit on the Anthropic routes' side calls upstream",
      "api/metrics/upstream.ts": "only the default of its injected `timeout` option",
    };
    const raw = /\bsetTimeout\(|\bsetInterval\(|\bAbortSignal\.timeout\(/;
    const arming = files(".")
      .map((file) => file.replace(/^\.\//, ""))
      .filter((file) => file !== "shared/timer.ts" && !/^(demo|ui)\//.test(file))
      .filter((file) => raw.test(readFileSync(join(SRC, file), "utf8")));
    expect(arming.filter((file) => !(file in exceptions))).toEqual([]);
    expect(Object.keys(exceptions).filter((file) => !arming.includes(file))).toEqual([]);
  });

  test("lower layers never import the layers above them", () => {
    const above: Record<string, string[]> = {
      shared: [
        "platform",
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
      // The operating system's side: only the shared helpers below it (src/platform/design.md).
      platform: [
        "config",
        "scheduler",
        "policy",
        "process",
        "proxy",
        "gpu",
        "peers",
        "api",
        "ui",
        "runtime",
        "cli",
      ],
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

  /**
   * What differs between operating systems lives in src/platform/ (design.md there): reading
   * /proc, prctl, and any branch on `process.platform`. Elsewhere code asks the platform, so a
   * Mac runs the same supervision with the Darwin readers and tests choose the platform they
   * need. Comments may name /proc; code may not read it. An exception that no longer applies
   * must leave the list.
   */
  test("only src/platform reads /proc, calls prctl or branches on process.platform", () => {
    const exceptions: Record<string, string> = {
      "gpu/process-tree.ts":
        "the GPU probe's own async reader of /proc/PID/stat (which pids nvidia-smi lists are qm's); nvidia-smi is Linux-only, and without /proc it falls back to the roots",
    };
    const code = (file: string) =>
      readFileSync(join(SRC, file), "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
    const banned = [/["'`]\/proc(\/|["'`])/, /\bprctl\b/, /\bprocess\.platform\b/];
    const found = files(".")
      .map((file) => file.replace(/^\.\//, ""))
      .filter((file) => !file.startsWith("platform/"))
      .filter((file) => banned.some((b) => b.test(code(file))));
    expect(found.filter((file) => !(file in exceptions))).toEqual([]);
    expect(Object.keys(exceptions).filter((file) => !found.includes(file))).toEqual([]);
  });
});
