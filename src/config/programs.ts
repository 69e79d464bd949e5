/**
 * Whether a model's program can be started: found on the `PATH` it will be started with (the
 * model's `env.PATH`, else qm's), or, for a path with a `/`, an executable file there. Checked
 * by `qm config check`, `qm serve` and `qm scan`, which would otherwise say "ok" and leave the
 * first request to fail.
 */
import { accessSync, constants, statSync } from "node:fs";
import type { ModelConfig } from "./types.ts";

export type Which = (program: string, path: string) => string | null;

export const which: Which = (program, path) => {
  if (program.includes("/")) {
    try {
      accessSync(program, constants.X_OK);
      return statSync(program).isFile() ? program : null;
    } catch {
      return null;
    }
  }
  return Bun.which(program, { PATH: path });
};

/** One line per model whose program cannot be found, naming the model and the program. */
export function missingPrograms(
  models: readonly ModelConfig[],
  find: Which = which,
  path: string = process.env.PATH ?? "",
): string[] {
  const out: string[] = [];
  for (const m of models) {
    const program = m.argv[0];
    if (program === undefined || m.variantOf) continue;
    if (find(program, m.env.PATH ?? path) !== null) continue;
    out.push(
      program.includes("/")
        ? `models.${m.id}.cmd: "${program}" is not an executable file; the model cannot start`
        : `models.${m.id}.cmd: "${program}" was not found on PATH; the model cannot start (install it, or give its full path)`,
    );
  }
  return out;
}
