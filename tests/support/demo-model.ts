/**
 * The demo upstream (`src/demo/cli.ts`, run by this Bun) as a model, built by the real loader
 * from a `[models.ID]` table: tests of the supervisor get exactly what `qm serve` would run.
 */
import { join } from "node:path";
import type { ModelConfig } from "../../src/config/types.ts";
import { commandLine, modelFromToml, tomlString } from "./config.ts";
import { freePort } from "./net.ts";

export const DEMO_CLI = join(import.meta.dir, "../../src/demo/cli.ts");

// biome-ignore lint/suspicious/noTemplateCurlyInString: qm's macro, not JS.
const PORT = "${PORT}";

/** argv that runs the demo upstream with this Bun. */
export function demoArgv(...flags: string[]): string[] {
  return [process.execPath, DEMO_CLI, ...flags];
}

export interface DemoOptions {
  /** The port (default: a free one). `${PORT}` is allocated from it, so qm may move it. */
  port?: number;
  /** The port is written into `cmd` and `proxy` as a number instead: qm may not move it. */
  fixed?: boolean;
  /** The command in place of the demo's own; `demo` is the demo's command line. */
  cmd?: (demo: string) => string;
  /** More keys of the model's table, as TOML lines (`check_endpoint = "none"`). */
  toml?: string;
}

/**
 * A model running the demo upstream with `--token-ms 0` and `flags`, on a port of its own:
 * `cmd = "bun demo/cli.ts --port ${PORT} --name ID --token-ms 0 …"`, the proxy the default.
 */
export function demoModel(id: string, flags: string[] = [], opts: DemoOptions = {}): ModelConfig {
  const port = opts.port ?? freePort();
  const at = opts.fixed ? String(port) : PORT;
  const demo = commandLine(demoArgv("--port", at, "--name", id, "--token-ms", "0", ...flags));
  const table = [
    `[models.${tomlString(id)}]`,
    `cmd = ${tomlString(opts.cmd ? opts.cmd(demo) : demo)}`,
    opts.fixed ? `proxy = "http://127.0.0.1:${port}"` : "",
    opts.toml ?? "",
  ];
  return modelFromToml(`[server]\nstart_port = ${port}\n\n${table.join("\n")}\n`);
}
