/**
 * Just enough JSON Schema (draft 2020-12, with draft-4 to 7 spellings) to check the arguments of
 * a tool call against the tool's declared parameters: `schemaErrors`. Its counterpart,
 * `exampleOf` (schema-example.ts), makes a value that passes. Tool schemas are the client's:
 * anything unknown is ignored, a `$ref` outside the document or past `MAX_DEPTH` is taken as
 * "anything", nothing throws.
 */

export type Schema = Record<string, unknown>;

/** Deeper than this, a schema is taken as "anything" (recursive `$ref`s end here). */
export const MAX_DEPTH = 24;

export const isObject = (x: unknown): x is Schema =>
  typeof x === "object" && x !== null && !Array.isArray(x);

/** A schema's `$ref` resolved within `root` (`#`, `#/$defs/X`, `#/definitions/X`, any pointer). */
export function resolve(schema: Schema, root: unknown): Schema | boolean {
  const ref = schema.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#")) return schema;
  let at: unknown = root;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    at =
      (isObject(at) || Array.isArray(at)) && Object.hasOwn(at, key)
        ? (at as Record<string, unknown>)[key]
        : undefined;
  }
  return isObject(at) || typeof at === "boolean" ? at : true;
}

/**
 * The schema of an array's item at `index`: a tuple's own (`prefixItems`, or draft 4-7's
 * `items` array), else the rest's (`items`, or `additionalItems` after a tuple); undefined: any.
 */
export function itemSchema(s: Schema, index: number): unknown {
  const tuple = Array.isArray(s.prefixItems)
    ? s.prefixItems
    : Array.isArray(s.items)
      ? s.items
      : [];
  if (index < tuple.length) return tuple[index];
  return Array.isArray(s.items) ? s.additionalItems : s.items;
}

/** `pattern` (as JavaScript reads it) matches; a pattern it cannot read matches anything. */
export function matches(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern, "u").test(text);
  } catch {
    return true;
  }
}

/**
 * Where `value` breaks `schema`: one message per violation, each with its JSON pointer; [] when
 * it satisfies it. Covers the keywords `exampleOf` reads, plus `not` and `uniqueItems`.
 */
export function schemaErrors(schema: unknown, value: unknown, root: unknown = schema): string[] {
  const errors: string[] = [];
  check(schema, value, root, "", errors, 0);
  return errors;
}

function typeOfValue(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function check(
  schema: unknown,
  v: unknown,
  root: unknown,
  at: string,
  errors: string[],
  depth: number,
): void {
  if (schema === false) errors.push(`${at || "/"}: no value is allowed here`);
  if (!isObject(schema) || depth > MAX_DEPTH) return;
  const s = resolve(schema, root);
  if (s !== schema) {
    check(s, v, root, at, errors, depth + 1);
    return;
  }
  const here = at || "/";
  const types = typeof s.type === "string" ? [s.type] : Array.isArray(s.type) ? s.type : null;
  const t = typeOfValue(v);
  if (types && !types.some((x) => x === t || (x === "number" && t === "integer"))) {
    errors.push(`${here}: expected ${types.join(" or ")}, got ${t}`);
    return;
  }
  if ("const" in s && JSON.stringify(s.const) !== JSON.stringify(v)) {
    errors.push(`${here}: must be ${JSON.stringify(s.const)}`);
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
    errors.push(`${here}: must be one of ${JSON.stringify(s.enum)}`);
  }
  for (const b of Array.isArray(s.allOf) ? s.allOf : []) check(b, v, root, at, errors, depth + 1);
  const passing = (list: unknown) =>
    (Array.isArray(list) ? list : []).filter((b) => schemaErrors(b, v, root).length === 0).length;
  if (Array.isArray(s.anyOf) && passing(s.anyOf) === 0)
    errors.push(`${here}: matches no anyOf branch`);
  if (Array.isArray(s.oneOf) && passing(s.oneOf) !== 1) {
    errors.push(`${here}: must match exactly one oneOf branch`);
  }
  if (s.not !== undefined && schemaErrors(s.not, v, root).length === 0) {
    errors.push(`${here}: matches its "not"`);
  }
  if (typeof v === "string") checkString(s, v, here, errors);
  if (typeof v === "number") checkNumber(s, v, here, errors);
  if (Array.isArray(v)) checkArray(s, v, root, at, errors, depth);
  if (isObject(v)) checkObject(s, v, root, at, errors, depth);
}

function checkString(s: Schema, v: string, here: string, errors: string[]): void {
  const length = [...v].length;
  if (typeof s.minLength === "number" && length < s.minLength)
    errors.push(`${here}: shorter than ${s.minLength}`);
  if (typeof s.maxLength === "number" && length > s.maxLength)
    errors.push(`${here}: longer than ${s.maxLength}`);
  if (typeof s.pattern === "string" && !matches(s.pattern, v))
    errors.push(`${here}: does not match ${s.pattern}`);
}

function checkNumber(s: Schema, v: number, here: string, errors: string[]): void {
  const { minimum: lo, maximum: hi, exclusiveMinimum: xlo, exclusiveMaximum: xhi } = s;
  if (typeof lo === "number" && (xlo === true ? v <= lo : v < lo))
    errors.push(`${here}: below ${lo}`);
  if (typeof hi === "number" && (xhi === true ? v >= hi : v > hi))
    errors.push(`${here}: above ${hi}`);
  if (typeof xlo === "number" && v <= xlo) errors.push(`${here}: not above ${xlo}`);
  if (typeof xhi === "number" && v >= xhi) errors.push(`${here}: not below ${xhi}`);
  const m = s.multipleOf;
  if (typeof m === "number" && m > 0 && Math.abs(v / m - Math.round(v / m)) > 1e-9) {
    errors.push(`${here}: not a multiple of ${m}`);
  }
}

function checkArray(
  s: Schema,
  v: unknown[],
  root: unknown,
  at: string,
  errors: string[],
  depth: number,
): void {
  const here = at || "/";
  if (typeof s.minItems === "number" && v.length < s.minItems)
    errors.push(`${here}: fewer than ${s.minItems} items`);
  if (typeof s.maxItems === "number" && v.length > s.maxItems)
    errors.push(`${here}: more than ${s.maxItems} items`);
  if (s.uniqueItems === true && new Set(v.map((x) => JSON.stringify(x))).size !== v.length) {
    errors.push(`${here}: items are not unique`);
  }
  v.forEach((item, i) => {
    const sub = itemSchema(s, i);
    if (sub !== undefined) check(sub, item, root, `${at}/${i}`, errors, depth + 1);
  });
}

function checkObject(
  s: Schema,
  v: Record<string, unknown>,
  root: unknown,
  at: string,
  errors: string[],
  depth: number,
): void {
  const here = at || "/";
  const props = isObject(s.properties) ? s.properties : {};
  for (const key of Array.isArray(s.required) ? s.required : []) {
    if (typeof key === "string" && !Object.hasOwn(v, key))
      errors.push(`${here}: "${key}" is required`);
  }
  for (const [key, item] of Object.entries(v)) {
    const path = `${at}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    if (Object.hasOwn(props, key)) check(props[key], item, root, path, errors, depth + 1);
    else if (s.additionalProperties === false) errors.push(`${here}: "${key}" is not allowed`);
    else if (isObject(s.additionalProperties))
      check(s.additionalProperties, item, root, path, errors, depth + 1);
  }
  const n = Object.keys(v).length;
  if (typeof s.minProperties === "number" && n < s.minProperties)
    errors.push(`${here}: fewer than ${s.minProperties} properties`);
  if (typeof s.maxProperties === "number" && n > s.maxProperties)
    errors.push(`${here}: more than ${s.maxProperties} properties`);
}
