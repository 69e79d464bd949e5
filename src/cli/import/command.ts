/** `qm import llama-swap FILE`: the quartermaster.toml for a llama-swap config, on stdout. */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { parse, UsageError } from "../args.ts";
import { IMPORT_HELP } from "../help.ts";
import { ImportError, importLlamaSwap } from "./llama-swap.ts";

export function importCommand(
  argv: string[],
  out = (t: string) => process.stdout.write(t),
): number {
  const { values, positionals } = parse(argv, {});
  if (values.help) {
    out(IMPORT_HELP);
    return 0;
  }
  const [kind, file, ...extra] = positionals;
  if (kind === undefined) throw new UsageError("qm import needs a kind: qm import llama-swap FILE");
  if (kind !== "llama-swap") throw new UsageError(`qm import knows llama-swap, not "${kind}"`);
  if (file === undefined || extra.length > 0) {
    throw new UsageError("qm import llama-swap takes exactly one FILE");
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new Error(
      code === "ENOENT" ? `${file}: no such file` : `${file}: cannot read it (${code ?? err})`,
    );
  }
  let doc: unknown;
  try {
    // YAML 1.2, as llama-swap's Go YAML library reads it; anchors and merge keys included.
    doc = parseYaml(text, { merge: true, maxAliasCount: 1000 });
  } catch (err) {
    throw new Error(`${file}: not valid YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  try {
    out(importLlamaSwap(doc, file));
  } catch (err) {
    if (err instanceof ImportError) throw new Error(err.message);
    throw err;
  }
  return 0;
}
