/** Loads inline TOML through the real loader with hermetic defaults (no env, all ports free). */
import {
  type Config,
  ConfigError,
  type ConfigIssue,
  type LoadOptions,
} from "../../src/config/index.ts";
import { config } from "../support/config.ts";

export const FILE = "quartermaster.toml";

export function load(text: string, opts: Partial<LoadOptions> = {}): Config {
  return config(text, { file: FILE, ...opts });
}

export function issues(text: string, opts: Partial<LoadOptions> = {}): readonly ConfigIssue[] {
  try {
    load(text, opts);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error("expected the config to be rejected");
}

/** The formatted lines `qm config check` would print. */
export function errors(text: string, opts: Partial<LoadOptions> = {}): string[] {
  return issues(text, opts).map((i) => new ConfigError([i]).format());
}
