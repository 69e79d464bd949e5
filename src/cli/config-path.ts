import { ConfigError, loadConfigFile } from "../config/index.ts";
import type { Config } from "../config/types.ts";
import { parse } from "./args.ts";

/** `-c`, else `$QM_CONFIG`, else `./quartermaster.toml`. */
export function configPath(flag: string | undefined): string {
  return flag ?? process.env.QM_CONFIG ?? "quartermaster.toml";
}

/**
 * The command that runs this very qm, for `${QM_BIN}`: the compiled binary itself, or Bun plus
 * the entry script when running from source. Quoted so paths with spaces survive splitting.
 */
export function qmBin(): string {
  const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);
  const compiled = import.meta.url.includes("$bunfs") || import.meta.url.includes("~BUN");
  return compiled ? quote(process.execPath) : `${quote(process.execPath)} ${quote(Bun.main)}`;
}

export type Loaded = { ok: true; config: Config } | { ok: false; message: string };

export function loadForCli(path: string): Loaded {
  try {
    return { ok: true, config: loadConfigFile(path, { qmBin: qmBin() }) };
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, message: err.format() };
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, message: `${path}: ${message}` };
  }
}

/**
 * `[-c FILE] [--help]` of a command that reads the config: the config and its path, or the
 * exit code once help or the config's errors have been printed.
 */
export function configFromArgs(
  argv: string[],
  help: string,
): { config: Config; path: string } | { exit: number } {
  const { values } = parse(argv, { config: { type: "string", short: "c" } }, false);
  if (values.help) {
    process.stdout.write(help);
    return { exit: 0 };
  }
  const path = configPath(values.config);
  const loaded = loadForCli(path);
  if (!loaded.ok) {
    process.stderr.write(`${loaded.message}\n`);
    return { exit: 1 };
  }
  return { config: loaded.config, path };
}
