/**
 * A value a JSON Schema accepts, for the demo model's tool calls: the arguments a client's tool
 * declares (`exampleOf`). Objects get their required properties only; enums and consts their
 * first value; strings a hint from their property's name, or a value of their `format`;
 * numbers 1, moved into their range. Checked by `schemaErrors` (json-schema.ts).
 */
import {
  isObject,
  itemSchema,
  MAX_DEPTH,
  matches,
  resolve,
  type Schema,
  schemaErrors,
} from "./json-schema.ts";

/** Values for the simple string formats (`format`), each valid for it. */
const FORMATS: Record<string, string> = {
  "date-time": "2026-01-01T00:00:00Z",
  date: "2026-01-01",
  time: "12:00:00Z",
  email: "demo@example.com",
  "idn-email": "demo@example.com",
  uri: "https://example.com/",
  url: "https://example.com/",
  "uri-reference": "https://example.com/",
  iri: "https://example.com/",
  uuid: "00000000-0000-4000-8000-000000000000",
  ipv4: "127.0.0.1",
  ipv6: "::1",
  hostname: "example.com",
  duration: "PT1S",
};

/** The types a schema allows (`type`, else what its keywords imply); empty = any. */
function typesOf(s: Schema): string[] {
  if (typeof s.type === "string") return [s.type];
  if (Array.isArray(s.type)) return s.type.filter((t): t is string => typeof t === "string");
  if (isObject(s.properties) || Array.isArray(s.required)) return ["object"];
  if (s.items !== undefined || s.prefixItems !== undefined) return ["array"];
  return [];
}

/** A name's hint for a string value (the property it fills). */
function stringFor(name: string): string {
  if (/location|city/i.test(name)) return "Paris";
  if (/unit/i.test(name)) return "celsius";
  if (/url|uri|link/i.test(name)) return "https://example.com/";
  if (/path|file|dir/i.test(name)) return ".";
  return "example";
}

/**
 * A value `schema` accepts. `name` is the property it is for (a hint for strings), `root` the
 * document `$ref`s point into. Objects get their required properties only.
 */
export function exampleOf(schema: unknown, root: unknown = schema, name = "", depth = 0): unknown {
  if (schema === false || depth > MAX_DEPTH) return null;
  if (!isObject(schema)) return stringFor(name);
  const s = resolve(schema, root);
  if (!isObject(s)) return s === false ? null : stringFor(name);
  if (s !== schema) return exampleOf(s, root, name, depth + 1);
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if ("default" in s && schemaErrors(s, s.default, root).length === 0) return s.default;
  if (Array.isArray(s.allOf)) return exampleOf(mergeAll(s, root), root, name, depth + 1);
  for (const key of ["anyOf", "oneOf"]) {
    const branches = s[key];
    if (!Array.isArray(branches) || branches.length === 0) continue;
    // The first branch that is not just `null` (a nullable field gets a real value).
    const branch = branches.find((b) => !(isObject(b) && b.type === "null")) ?? branches[0];
    const value = exampleOf(branch, root, name, depth + 1);
    if (schemaErrors(s, value, root).length === 0) return value;
  }
  const types = typesOf(s);
  const type = types.find((t) => t !== "null") ?? types[0] ?? "string";
  switch (type) {
    case "object":
      return objectOf(s, root, depth);
    case "array":
      return arrayOf(s, root, name, depth);
    case "integer":
    case "number":
      return numberOf(s, type === "integer");
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return stringOf(s, name);
  }
}

function objectOf(s: Schema, root: unknown, depth: number): Record<string, unknown> {
  const props = isObject(s.properties) ? s.properties : {};
  // Own properties only, and built by fromEntries: a key such as "__proto__" stays a key.
  const out = new Map<string, unknown>();
  const required = Array.isArray(s.required) ? s.required : [];
  for (const key of required) {
    if (typeof key !== "string" || out.has(key)) continue;
    const sub = Object.hasOwn(props, key)
      ? props[key]
      : isObject(s.additionalProperties)
        ? s.additionalProperties
        : true;
    out.set(key, exampleOf(sub, root, key, depth + 1));
  }
  // `minProperties` beyond the required ones: the declared optional properties, in order.
  const min = typeof s.minProperties === "number" ? s.minProperties : 0;
  for (const key of Object.keys(props)) {
    if (out.size >= min) break;
    if (!out.has(key)) out.set(key, exampleOf(props[key], root, key, depth + 1));
  }
  return Object.fromEntries(out);
}

function arrayOf(s: Schema, root: unknown, name: string, depth: number): unknown[] {
  const min = Math.max(typeof s.minItems === "number" ? s.minItems : 0, 0);
  const out: unknown[] = [];
  for (let i = 0; i < min; i++) {
    const sub = itemSchema(s, i) ?? true;
    const item = exampleOf(sub, root, name, depth + 1);
    // `uniqueItems`: a repeat is told apart, where the item's schema allows the change.
    const seen =
      s.uniqueItems === true && out.some((x) => JSON.stringify(x) === JSON.stringify(item));
    const other =
      typeof item === "string" ? `${item}${i}` : typeof item === "number" ? item + i : item;
    out.push(seen && schemaErrors(sub, other, root).length === 0 ? other : item);
  }
  return out;
}

function numberOf(s: Schema, integer: boolean): number {
  let lo = typeof s.minimum === "number" ? s.minimum : Number.NEGATIVE_INFINITY;
  let hi = typeof s.maximum === "number" ? s.maximum : Number.POSITIVE_INFINITY;
  const exLo = s.exclusiveMinimum;
  const exHi = s.exclusiveMaximum;
  const step = integer ? 1 : 0.5;
  if (typeof exLo === "number") lo = Math.max(lo, exLo + step);
  else if (exLo === true) lo += step;
  if (typeof exHi === "number") hi = Math.min(hi, exHi - step);
  else if (exHi === true) hi -= step;
  let n = Math.min(Math.max(1, lo), hi);
  if (integer) n = Math.ceil(n);
  const m = s.multipleOf;
  if (typeof m === "number" && m > 0) n = Math.ceil(n / m) * m;
  return n;
}

function stringOf(s: Schema, name: string): string {
  const format = typeof s.format === "string" ? FORMATS[s.format] : undefined;
  let text = format ?? stringFor(name);
  const min = typeof s.minLength === "number" ? s.minLength : 0;
  const max = typeof s.maxLength === "number" ? s.maxLength : Number.POSITIVE_INFINITY;
  while (text.length < min) text += "x";
  if (text.length > max) text = text.slice(0, max);
  if (typeof s.pattern === "string" && !matches(s.pattern, text)) {
    // A few simple candidates; a pattern none of them fits keeps the text (no generator here).
    const found = ["a", "A", "0", "a0", "example-1", "abc", "ABC", "123"].find(
      (c) => c.length >= min && c.length <= max && matches(s.pattern as string, c),
    );
    if (found !== undefined) text = found;
  }
  return text;
}

/** `allOf`'s branches folded into one schema: properties and required joined, the rest kept. */
function mergeAll(s: Schema, root: unknown): Schema {
  const out: Schema = { ...s };
  delete out.allOf;
  for (const raw of s.allOf as unknown[]) {
    const b = isObject(raw) ? resolve(raw, root) : raw;
    if (!isObject(b)) continue;
    for (const [k, v] of Object.entries(b)) {
      if (k === "properties" && isObject(v))
        out.properties = { ...(out.properties as Schema), ...v };
      else if (k === "required" && Array.isArray(v)) {
        out.required = [...new Set([...((out.required as string[]) ?? []), ...v])];
      } else if (!(k in out)) out[k] = v;
    }
  }
  return out;
}
