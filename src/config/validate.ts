/**
 * Schema validation of the parsed TOML: fills defaults, then reports every schema
 * violation with a message written for people (`expected a number, got "ten"`) rather
 * than typebox's (`Expected number`), and turns unknown keys into "did you mean" hints.
 */
import { Kind, type TSchema } from "@sinclair/typebox";
import { Value, type ValueError, ValueErrorType } from "@sinclair/typebox/value";
import type { Issues, Path } from "./issues.ts";
import { type ConfigFile, ConfigFileSchema } from "./schema.ts";
import { didYouMean } from "./suggest.ts";

export function isTable(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date);
}

/** How a TOML value reads in a message. */
export function describe(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return "an array";
  if (v instanceof Date) return "a date";
  if (isTable(v)) return "a table";
  return String(v);
}

function expected(schema: TSchema): string {
  switch (schema[Kind]) {
    case "Number":
      return "a number";
    case "Integer":
      return "an integer";
    case "String":
      return "a string";
    case "Boolean":
      return "true or false";
    case "Array":
      return "an array";
    case "Object":
    case "Record":
      return "a table";
    case "Literal":
      return JSON.stringify(schema.const);
    case "Union": {
      const options = (schema.anyOf as TSchema[]).map(expected);
      const literals = (schema.anyOf as TSchema[]).every((s) => s[Kind] === "Literal");
      return literals ? `one of ${options.join(", ")}` : options.join(" or ");
    }
    default:
      return "a valid value";
  }
}

function message(error: ValueError, key: string): string {
  const { schema, value } = error;
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return `unknown key "${key}"${didYouMean(key, Object.keys(schema.properties ?? {}))}`;
    case ValueErrorType.ObjectRequiredProperty:
      return `missing required key "${key}"`;
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return schema.minimum === 0
        ? `must not be negative, got ${describe(value)}`
        : `must be at least ${schema.minimum}, got ${describe(value)}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${schema.maximum}, got ${describe(value)}`;
    case ValueErrorType.StringMinLength:
      return "must not be empty";
    default:
      return `expected ${expected(schema)}, got ${describe(value)}`;
  }
}

/** JSON pointer → path, using the value to tell array indices from numeric-looking keys. */
function toPath(pointer: string, root: unknown): Path {
  const path: (string | number)[] = [];
  let node: unknown = root;
  for (const raw of pointer.split("/").slice(1)) {
    const seg = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(node)) {
      path.push(Number(seg));
      node = node[Number(seg)];
    } else {
      path.push(seg);
      node = isTable(node) ? node[seg] : undefined;
    }
  }
  return path;
}

/**
 * Typebox treats any object (a TOML date, an array of tables) as a table and would fill it
 * with defaults; reject those first and drop them so one mistake gives one issue.
 */
function checkTables(schema: TSchema, value: unknown, path: Path, issues: Issues): boolean {
  const kind = schema[Kind];
  if (kind !== "Object" && kind !== "Record") return true;
  if (!isTable(value)) {
    issues.at(path, `expected a table, got ${describe(value)}`);
    return false;
  }
  for (const key of Object.keys(value)) {
    const inner: TSchema | undefined =
      kind === "Object"
        ? schema.properties[key]
        : (Object.values(schema.patternProperties)[0] as TSchema);
    if (inner && inner[Kind] === "Union" && isTable(value[key])) {
      // Typebox cannot fill defaults into a table where a union of scalars belongs (it
      // throws), so this one is reported and dropped here.
      issues.at([...path, key], `expected ${expected(inner)}, got a table`);
      delete value[key];
    } else if (
      inner &&
      value[key] !== undefined &&
      !checkTables(inner, value[key], [...path, key], issues)
    )
      delete value[key];
  }
  return true;
}

/** Fills defaults in place and reports schema violations; the result is typed but only
 *  trustworthy where `issues.within(path)` is false. */
export function applySchema(raw: Record<string, unknown>, issues: Issues): ConfigFile {
  checkTables(ConfigFileSchema, raw, [], issues);
  const filled = Value.Default(ConfigFileSchema, raw) as Record<string, unknown>;
  // Check passes exactly when Errors yields nothing, at a third of the cost: a valid file (every
  // reload, every test config) skips the walk that builds error paths.
  if (Value.Check(ConfigFileSchema, filled)) return filled as ConfigFile;
  for (const error of Value.Errors(ConfigFileSchema, filled)) {
    // A missing required key also fails its type check; "missing" says it better.
    if (error.value === undefined && error.type !== ValueErrorType.ObjectRequiredProperty) continue;
    const path = toPath(error.path, filled);
    issues.at(path, message(error, String(path[path.length - 1] ?? "")));
  }
  return filled as ConfigFile;
}
