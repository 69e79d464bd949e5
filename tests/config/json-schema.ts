/**
 * A JSON Schema document read back into TypeBox, so that what validates the example configs is
 * the shipped JSON (docs/quartermaster.schema.json), not the typebox objects it was made from.
 * It understands the Draft 4 keywords qm's schema uses and throws on any other: a keyword the
 * validator skipped would let anything through.
 */
import { type TSchema, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

type Json = Record<string, unknown>;

/** Keywords that only annotate (editors show them; validation ignores them). */
export const ANNOTATIONS = ["$schema", "title", "description", "default", "examples"];

/** Draft 4 validation keywords (json-schema.org/draft-04) this reader applies. */
export const VALIDATION = [
  "type",
  "enum",
  "anyOf",
  "minimum",
  "maximum",
  "minLength",
  "items",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
];

const KNOWN = new Set([...ANNOTATIONS, ...VALIDATION]);

function bounds(node: Json): Json {
  const out: Json = {};
  for (const k of ["minimum", "maximum", "minLength"]) if (k in node) out[k] = node[k];
  return out;
}

export function fromJsonSchema(node: Json): TSchema {
  for (const key of Object.keys(node)) {
    if (!KNOWN.has(key)) throw new Error(`unsupported JSON Schema keyword "${key}"`);
  }
  if (Array.isArray(node.enum)) {
    return Type.Union(node.enum.map((v) => Type.Literal(v as string | number | boolean)));
  }
  if (Array.isArray(node.anyOf)) return Type.Union(node.anyOf.map((o) => fromJsonSchema(o)));
  switch (node.type) {
    case undefined:
      // No type: any value (`set_params` values).
      return Type.Unknown();
    case "string":
      return Type.String(bounds(node));
    case "number":
      return Type.Number(bounds(node));
    case "integer":
      return Type.Integer(bounds(node));
    case "boolean":
      return Type.Boolean();
    case "array":
      return Type.Array(fromJsonSchema(node.items as Json));
    case "object":
      return fromObject(node);
    default:
      throw new Error(`unsupported JSON Schema type ${JSON.stringify(node.type)}`);
  }
}

function fromObject(node: Json): TSchema {
  if (node.patternProperties) {
    const patterns = Object.entries(node.patternProperties as Record<string, Json>);
    // Every key qm's records accept; another pattern would need a real regex match per key.
    if (patterns.length !== 1 || patterns[0]![0] !== "^(.*)$" || node.properties) {
      throw new Error(`unsupported patternProperties ${JSON.stringify(node.patternProperties)}`);
    }
    return Type.Record(Type.String(), fromJsonSchema(patterns[0]![1]));
  }
  const required = new Set((node.required as string[] | undefined) ?? []);
  const props = Object.entries((node.properties as Record<string, Json> | undefined) ?? {});
  const typed = Object.fromEntries(
    props.map(([k, v]) => {
      const schema = fromJsonSchema(v);
      return [k, required.has(k) ? schema : Type.Optional(schema)];
    }),
  );
  return Type.Object(typed, { additionalProperties: node.additionalProperties !== false });
}

/** The JSON Pointer and message of every way `value` fails `schema` (empty: it passes). */
export function violations(schema: TSchema, value: unknown): string[] {
  return [...Value.Errors(schema, value)].map((e) => `${e.path || "/"}: ${e.message}`);
}
