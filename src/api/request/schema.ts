/**
 * Request bodies checked against a typebox schema, with messages a client can act on: the
 * first problem, the field it is in (`input[0].call_id`, `options.temperature`), and what the
 * field must be. A schema states that in its own words with the `error` option
 * (`Type.Number({ error: "must be a number from 0 to 2" })`); without one, typebox's message is
 * used; `errorField` names the field inside that the problem is reported at (an object whose
 * point is one field: `{function: {name}}` says "function.name"). A union without its own
 * `error` (a field that may also be null) reports the problem of the variant the value came
 * closest to, so a bad element deep inside is named as itself.
 */
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/value";
import { badRequest } from "./body.ts";

export interface Problem {
  /** The field, as the API names it: `a.b[0].c`; "" for the body itself. */
  field: string;
  /** What it must be (the schema's `error`), or typebox's word for what is wrong. */
  message: string;
  /** The field is required and missing. */
  missing: boolean;
}

const compiled = new Map<TSchema, ReturnType<typeof TypeCompiler.Compile>>();

/** `schema`'s checker, compiled once. */
export function checkerOf(schema: TSchema): ReturnType<typeof TypeCompiler.Compile> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  return check;
}

/** The first problem of `value` against `schema`, or null when it fits. */
export function problemOf(schema: TSchema, value: unknown): Problem | null {
  const check = checkerOf(schema);
  if (check.Check(value)) return null;
  const first = check.Errors(value).First();
  if (!first) return { field: "", message: "is not valid", missing: false };
  const e = closest(first);
  const { error, errorField } = e.schema as { error?: unknown; errorField?: unknown };
  const field = fieldName(e.path);
  return {
    field:
      typeof errorField === "string"
        ? field === ""
          ? errorField
          : `${field}.${errorField}`
        : field,
    message: typeof error === "string" ? error : e.message,
    missing: e.type === ValueErrorType.ObjectRequiredProperty && typeof errorField !== "string",
  };
}

/**
 * Throws a 400 for the first problem of `value` (the field at `prefix`, when it is part of a
 * body) in the API's words (`say`), with `param` naming the field; returns `value` typed.
 */
export function checked<T>(
  schema: TSchema,
  value: unknown,
  say: (p: Problem) => string,
  prefix = "",
): T {
  const p = problemOf(schema, value);
  if (p === null) return value as T;
  const field = prefix === "" ? p.field : p.field === "" ? prefix : join(prefix, p.field);
  throw badRequest(say({ ...p, field }), field || undefined);
}

function join(prefix: string, field: string): string {
  return field.startsWith("[") ? prefix + field : `${prefix}.${field}`;
}

/** Within a union without its own words, the deepest problem of any variant. */
function closest(e: ValueError): ValueError {
  if (
    e.type !== ValueErrorType.Union ||
    typeof (e.schema as { error?: unknown }).error === "string"
  ) {
    return e;
  }
  let best: ValueError | null = null;
  for (const variant of e.errors) {
    const first = variant.First();
    if (!first) continue;
    const inner = closest(first);
    if (!best || inner.path.length > best.path.length) best = inner;
  }
  return best ?? e;
}

/** `/input/0/call_id` → `input[0].call_id`. */
function fieldName(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(seg) ? `[${seg}]` : out === "" ? seg : `.${seg}`;
  }
  return out;
}
