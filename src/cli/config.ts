import { missingPrograms } from "../config/programs.ts";
import { parse, UsageError } from "./args.ts";
import { configFromArgs } from "./config-path.ts";
import { configSchemaText } from "./config-schema.ts";
import { CONFIG_HELP } from "./help.ts";

/** `qm config check [-c FILE]` and `qm config schema`. */
export async function configCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h" || sub === undefined) {
    process.stdout.write(CONFIG_HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub === "schema") return schemaCommand(rest);
  if (sub !== "check") throw new UsageError(`unknown config command "${sub}"`);
  const loaded = configFromArgs(rest, CONFIG_HELP);
  if ("exit" in loaded) return loaded.exit;
  const models = Object.values(loaded.config.models);
  const warnings = missingPrograms(models);
  for (const w of warnings) process.stderr.write(`${loaded.path}: warning: ${w}\n`);
  const n = models.length;
  const warned = warnings.length
    ? `, ${warnings.length} warning${warnings.length === 1 ? "" : "s"}`
    : "";
  process.stdout.write(`${loaded.path}: ok (${n} model${n === 1 ? "" : "s"}${warned})\n`);
  return 0;
}

/** The JSON Schema of the config file, on stdout (docs/quartermaster.schema.json is a copy). */
function schemaCommand(argv: string[]): number {
  const { values } = parse(argv, {}, false);
  if (values.help) {
    process.stdout.write(CONFIG_HELP);
    return 0;
  }
  process.stdout.write(configSchemaText());
  return 0;
}
