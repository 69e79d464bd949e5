/**
 * Configs for tests, always through the real loader from inline TOML: a test's models are what
 * `qm serve` would build from the same text, so they cannot drift from the loader's output.
 */
import { type LoadOptions, loadConfigText } from "../../src/config/index.ts";
import type { Config, ModelConfig } from "../../src/config/types.ts";

/** Loads inline TOML: no environment, and every port free unless `isPortFree` says otherwise. */
export function config(toml: string, opts: Partial<LoadOptions> = {}): Config {
  return loadConfigText(toml, { file: "test.toml", env: {}, isPortFree: () => true, ...opts });
}

/** The models the loader builds from `toml`, by id. */
export function modelsFromToml(
  toml: string,
  opts: Partial<LoadOptions> = {},
): Record<string, ModelConfig> {
  return config(toml, opts).models;
}

/** The one model `toml` defines. */
export function modelFromToml(toml: string, opts: Partial<LoadOptions> = {}): ModelConfig {
  const models = Object.values(modelsFromToml(toml, opts));
  if (models.length !== 1) throw new Error(`expected one model in the TOML, got ${models.length}`);
  return models[0]!;
}

/** A TOML basic string. JSON's escapes are all TOML's too (TOML 1.0, "String"). */
export function tomlString(text: string): string {
  return JSON.stringify(text);
}

/** A `cmd` line that the loader splits (POSIX sh quoting) back into exactly `argv`. */
export function commandLine(argv: readonly string[]): string {
  return argv
    .map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`))
    .join(" ");
}
