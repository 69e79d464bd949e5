import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");
const TESTS = import.meta.dir;

function files(dir: string): string[] {
  return readdirSync(join(SRC, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Every folder under `root`, as a path relative to it, fixtures and screenshots left out. */
function folders(root: string, dir = ""): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== "fixtures" && !e.name.startsWith("__"))
    .flatMap((e) => [join(dir, e.name), ...folders(root, join(dir, e.name))]);
}

/**
 * The folders of tests/ that are not folders of src/. A test lives in the folder of the code it
 * tests (CONTRIBUTING.md, "Where a test goes"); these hold the tests of something else.
 */
const NOT_IN_SRC = new Set(["support", "integration", "release", "deploy"]);

function strayFolders(testFolders: string[], inSrc: (folder: string) => boolean): string[] {
  return testFolders.filter((f) => !NOT_IN_SRC.has(f.split("/")[0]!) && !inSrc(f));
}

/**
 * The files of src/ allowed past 400 lines, each with why. A data table reads top to bottom
 * and grows by one entry at a time; code past 400 lines is split by concern. An entry that no
 * longer applies must leave the list.
 */
const LONG_FILES: Record<string, string> = {
  "cli/config-docs.ts":
    "a data table: what each config key means, one entry per key, in the file's order",
};
const MAX_LINES = 400;

/** Lines as `wc -l` counts them. */
const lineCount = (text: string) => (text.match(/\n/g) ?? []).length;

/**
 * Every module specifier in `text`: `import … from`, `import type … from`, a bare `import "…"`,
 * `export … from` and `export * from` (a re-export loads its module as an import does), and
 * `import("…")`. A statement may span lines. Only names, braces, commas, `*`, `as` and `type`
 * may stand between the keyword and `from`, so `export function fromX(` is no import.
 */
function specifiersIn(text: string): string[] {
  const statements = /^(?:import|export)\s+(?:[\w$*{},\s]*?\bfrom\s*)?["']([^"']+)["']/gm;
  const dynamic = /\bimport\(\s*["']([^"']+)["']\s*\)/g;
  return [...text.matchAll(statements), ...text.matchAll(dynamic)].map((m) => m[1]!);
}

/** What `file` loads: every rule below reads this, so a re-export cannot slip past one. */
function imports(file: string): string[] {
  return specifiersIn(readFileSync(join(SRC, file), "utf8"));
}

/** Every module of src/ that `file` loads, types included, as a path under src/. */
function dependencies(file: string): string[] {
  return imports(file)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => join(dirname(file), spec));
}

/** The import cycles among `all` (Tarjan's strongly connected components of two or more). */
function cyclesOf(all: string[], depsOf: (file: string) => string[]): string[][] {
  const graph = new Map(all.map((f) => [f, depsOf(f).filter((d) => d !== f)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const f of all) if (!index.has(f)) visit(f);
  return found;
}

/**
 * The dependency direction of STYLE.md: `shared` ← `config` ← `scheduler`/`policy` (pure) ←
 * `process`/`proxy`/`gpu`/`peers`/`observe` ← `api` ← `runtime` ← `cli`. Only the runtime sees
 * everything.
 */
describe("architecture", () => {
  test("the scheduler is pure: no I/O, timers, Bun or Elysia", () => {
    for (const file of files("scheduler")) {
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

  test("a policy is pure: no I/O, clock, timers, logging, Bun or await", () => {
    // It answers one question from what it is given, for every queued request on every event
    // (src/policy/design.md): it reads the config's types and nothing that could do I/O.
    const policies = files("policy");
    expect(policies.length).toBeGreaterThan(3);
    for (const file of policies) {
      for (const spec of imports(file)) {
        const ok =
          spec.startsWith("./") || spec === "../config/types.ts" || spec === "../shared/errors.ts";
        expect({ file, spec, ok }).toEqual({ file, spec, ok: true });
      }
      const text = readFileSync(join(SRC, file), "utf8");
      for (const banned of [
        /\bsetTimeout\b/,
        /\bsetInterval\b/,
        /\bqueueMicrotask\b/,
        /\bfetch\b/,
        /\bBun\./,
        /\bawait\b/,
        /\bDate\.now\b/,
        /\bnew Date\(/,
        /\bperformance\.now\b/,
        /\bconsole\./,
        /\bprocess\./,
      ]) {
        expect({ file, uses: String(banned), found: banned.test(text) }).toEqual({
          file,
          uses: String(banned),
          found: false,
        });
      }
    }
  });

  test("demo/ imports only shared/ and itself, and only the CLI starts it", () => {
    // The demo upstream is a separate fake model process (`qm demo-upstream`): it knows nothing
    // of qm's insides, and qm's code never calls into it.
    for (const file of files("demo")) {
      for (const spec of imports(file)) {
        const ok = spec.startsWith(".")
          ? spec.startsWith("./") || spec.startsWith("../shared/")
          : // bun:ffi: `--vram-mb` holds real GPU memory through the driver's library (cuda.ts).
            spec === "bun" || spec === "bun:ffi" || spec.startsWith("node:");
        expect({ file, spec, ok }).toEqual({ file, spec, ok: true });
      }
    }
    const users = files(".")
      .filter((file) => !file.startsWith("demo/"))
      .flatMap((file) =>
        imports(file)
          .filter((spec) => /(^|\/)demo\//.test(spec))
          .map((spec) => `${file} → ${spec}`),
      );
    expect(users.filter((use) => !use.startsWith("cli/"))).toEqual([]);
    expect(users.length).toBeGreaterThan(0);
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
      "observe/upstream.ts": "only the default of its injected `timeout` option",
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
        "observe",
        "api",
        "runtime",
        "cli",
      ],
      config: [
        "scheduler",
        "policy",
        "process",
        "proxy",
        "gpu",
        "peers",
        "observe",
        "api",
        "runtime",
        "cli",
      ],
      scheduler: ["observe"],
      policy: ["observe"],
      process: ["api", "runtime", "cli", "scheduler", "peers", "observe"],
      proxy: ["api", "runtime", "cli", "scheduler", "peers", "observe"],
      // Peers are reached through the proxy; nothing of the scheduler or the processes. A
      // managed node's model server (peers/node-server.ts) is the runtime's by its shape only.
      peers: ["api", "runtime", "cli", "scheduler", "policy", "process", "gpu", "observe"],
      // The GPU watch (gpu/gpu-watch.ts) sets the runtime's budget through its own interface.
      gpu: ["api", "runtime", "cli", "scheduler", "process", "proxy", "peers", "observe"],
      // What watches qm: the api serves it, the runtime feeds it; it reads neither.
      observe: ["api", "runtime", "cli", "process", "proxy", "gpu", "peers", "policy", "ui"],
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
        "observe",
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
      // Named keys: over the config, below the API and the runtime that use them.
      keys: [
        "api",
        "runtime",
        "cli",
        "store",
        "scheduler",
        "policy",
        "process",
        "proxy",
        "gpu",
        "peers",
        "observe",
        "ui",
      ],
      // The database: over the records' types, below the API and the runtime that use it.
      store: [
        "api",
        "runtime",
        "cli",
        "keys",
        "scheduler",
        "policy",
        "process",
        "proxy",
        "gpu",
        "peers",
        "ui",
      ],
    };
    // Nothing below them reaches the keys or the database.
    for (const layer of [
      "shared",
      "config",
      "scheduler",
      "policy",
      "process",
      "proxy",
      "gpu",
      "peers",
      "observe",
      "platform",
    ]) {
      above[layer] = [...above[layer]!, "keys", "store"];
    }
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

  test("only store/ opens a database", () => {
    const users = files(".").filter((file) => imports(file).includes("bun:sqlite"));
    expect(users.every((file) => file.startsWith("store/"))).toBe(true);
    expect(users.length).toBeGreaterThan(0);
  });

  test("no import cycle anywhere in src/ (types and re-exports included)", () => {
    const all = files(".");
    expect(all.length).toBeGreaterThan(100);
    expect(cyclesOf(all, dependencies)).toEqual([]);
  });

  test("the cycle finder finds a cycle, and none once it is broken", () => {
    // The finder itself, on a made-up graph: a → b → c → a, then with c's import gone.
    const graph = ["a.ts", "b.ts", "c.ts"];
    const deps: Record<string, string[]> = { "a.ts": ["b.ts"], "b.ts": ["c.ts"], "c.ts": ["a.ts"] };
    expect(cyclesOf(graph, (f) => deps[f] ?? [])).toEqual([["a.ts", "b.ts", "c.ts"]]);
    expect(cyclesOf(graph, (f) => (f === "c.ts" ? [] : (deps[f] ?? [])))).toEqual([]);
  });

  test("observe/ reads only the config's and the scheduler's types, shared/ and prom-client", () => {
    for (const file of files("observe")) {
      for (const spec of imports(file)) {
        const ok =
          spec.startsWith("./") ||
          spec.startsWith("../shared/") ||
          spec === "../config/types.ts" ||
          spec === "../scheduler/types.ts" ||
          spec === "../scheduler/stop-reason.ts" ||
          spec === "prom-client";
        expect({ file, spec, ok }).toEqual({ file, spec, ok: true });
      }
    }
  });

  test("the runtime reaches observability through observe/, and api/ only for its face", () => {
    // The Gateway and status types it implements, the listeners it serves: nothing else of api.
    const face = new Set([
      "api/gateway.ts",
      "api/status-json.ts",
      "api/app.ts",
      "api/control/observe-routes.ts",
    ]);
    for (const file of files("runtime")) {
      for (const spec of imports(file).filter((s) => s.startsWith("../api/"))) {
        const target = join("api", spec.slice("../api/".length));
        expect({ file, spec, ok: face.has(target) }).toEqual({ file, spec, ok: true });
      }
    }
  });

  test("the GPU watch is gpu/'s, a managed node's model server peers/', delay() shared/'s", () => {
    const moves: [string, string][] = [
      ["runtime/gpu-watch.ts", "gpu/gpu-watch.ts"],
      ["api/metrics", "observe/prometheus.ts"],
      ["process/delay.ts", "shared/timer.ts"],
    ];
    for (const [gone, there] of moves) {
      expect({ gone, exists: existsSync(join(SRC, gone)) }).toEqual({ gone, exists: false });
      expect({ there, exists: existsSync(join(SRC, there)) }).toEqual({ there, exists: true });
    }
    const nodes = readFileSync(join(SRC, "runtime/nodes.ts"), "utf8");
    expect(nodes.match(/^export class /gm)?.length).toBe(1);
    expect(readFileSync(join(SRC, "peers/node-server.ts"), "utf8")).toContain(
      "export class NodeServer",
    );
  });

  test("the import reader sees every form of import, re-exports included", () => {
    const text = [
      'import { a } from "./a.ts";',
      'import type { B } from "../b.ts";',
      'import "./side-effect.ts";',
      "import {",
      "  c,",
      "  type D,",
      '} from "./c.ts";',
      'import pkg from "../package.json" with { type: "json" };',
      'export { e } from "./e.ts";',
      'export type { F } from "./f.ts";',
      'export * from "./g.ts";',
      'export * as h from "./h.ts";',
      "export {",
      "  i,",
      '} from "./i.ts";',
      'const lazy = () => import("./j.ts");',
      // Not imports: a function whose name starts with "from", a string, a comment.
      "export function fromChat(json: unknown): string {",
      '  return "./k.ts";',
      "}",
      ' * import { l } from "./l.ts";',
    ].join("\n");
    expect(specifiersIn(text).sort()).toEqual(
      [
        "./a.ts",
        "../b.ts",
        "./side-effect.ts",
        "./c.ts",
        "../package.json",
        "./e.ts",
        "./f.ts",
        "./g.ts",
        "./h.ts",
        "./i.ts",
        "./j.ts",
      ].sort(),
    );
  });

  test("tests/ has the folders of src/, and only the few others it names", () => {
    const inSrc = (f: string) => existsSync(join(SRC, f));
    expect(strayFolders(folders(TESTS), inSrc)).toEqual([]);
    // The rule itself, on made-up folders: a folder src/ lacks is found, its tests included.
    const made = ["api", "api/anthropic", "anthropic", "anthropic/fixtures2", "support/x"];
    const has = (f: string) => f === "api" || f === "api/anthropic";
    expect(strayFolders(made, has)).toEqual(["anthropic", "anthropic/fixtures2"]);
  });

  test(`no file in src/ is over ${MAX_LINES} lines, but the declared data tables`, () => {
    const long = files(".")
      .map((file) => file.replace(/^\.\//, ""))
      .filter((file) => lineCount(readFileSync(join(SRC, file), "utf8")) > MAX_LINES);
    expect(long.filter((file) => !(file in LONG_FILES))).toEqual([]);
    expect(Object.keys(LONG_FILES).filter((file) => !long.includes(file))).toEqual([]);
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
