import { parseArgs } from "node:util";

/** A command-line mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

type Spec = Record<string, { type: "string" | "boolean"; short?: string }>;

/** `node:util` parseArgs with usage errors turned into UsageError. */
export function parse<T extends Spec>(argv: string[], options: T, allowPositionals = true) {
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: { type: "boolean", short: "h" } },
      allowPositionals,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}
