/** The demo's JSON Schema: `exampleOf` makes a value every schema accepts, `schemaErrors` says why not. */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { schemaErrors } from "../../src/demo/json-schema.ts";
import { exampleOf } from "../../src/demo/schema-example.ts";

const valid = (schema: unknown) => {
  const value = exampleOf(schema);
  return { value, errors: schemaErrors(schema, value) };
};

describe("exampleOf", () => {
  test.each([
    [
      "required fields only, by type",
      {
        type: "object",
        properties: {
          a: { type: "string" },
          n: { type: "integer" },
          b: { type: "boolean" },
          opt: { type: "string" },
        },
        required: ["a", "n", "b"],
        additionalProperties: false,
      },
      { a: "example", n: 1, b: false },
    ],
    [
      "enum and const",
      {
        type: "object",
        properties: { e: { enum: ["x", "y"] }, c: { const: 7 } },
        required: ["e", "c"],
      },
      { e: "x", c: 7 },
    ],
    [
      "nested objects and arrays with minItems",
      {
        type: "object",
        properties: {
          todos: {
            type: "array",
            minItems: 2,
            items: {
              type: "object",
              properties: {
                status: { type: "string", enum: ["pending", "done"] },
                id: { type: "string" },
              },
              required: ["status", "id"],
            },
          },
        },
        required: ["todos"],
      },
      {
        todos: [
          { status: "pending", id: "example" },
          { status: "pending", id: "example" },
        ],
      },
    ],
    [
      "ranges: exclusive bounds, multipleOf, integers",
      {
        type: "object",
        properties: {
          big: { type: "integer", minimum: 250, maximum: 30000 },
          low: { type: "number", exclusiveMaximum: 0 },
          step: { type: "integer", minimum: 3, multipleOf: 5 },
          old: { type: "number", minimum: 10, exclusiveMinimum: true },
        },
        required: ["big", "low", "step", "old"],
      },
      { big: 250, low: -0.5, step: 5, old: 10.5 },
    ],
    [
      "formats and lengths",
      {
        type: "object",
        properties: {
          when: { type: "string", format: "date-time" },
          url: { type: "string", format: "uri" },
          id: { type: "string", format: "uuid" },
          short: { type: "string", maxLength: 3 },
          long: { type: "string", minLength: 10 },
          code: { type: "string", pattern: "^[0-9]+$" },
        },
        required: ["when", "url", "id", "short", "long", "code"],
      },
      {
        when: "2026-01-01T00:00:00Z",
        url: "https://example.com/",
        id: "00000000-0000-4000-8000-000000000000",
        short: "exa",
        long: "examplexxx",
        code: "0",
      },
    ],
    [
      "$ref into $defs and definitions, anyOf nullable, allOf",
      {
        type: "object",
        $defs: {
          Point: { type: "object", properties: { x: { type: "number" } }, required: ["x"] },
        },
        definitions: { Name: { type: "string", minLength: 1 } },
        properties: {
          p: { $ref: "#/$defs/Point" },
          name: { $ref: "#/definitions/Name" },
          maybe: { anyOf: [{ type: "null" }, { type: "integer", minimum: 2 }] },
          both: {
            allOf: [
              { properties: { a: { type: "string" } }, required: ["a"] },
              { required: ["b"], properties: { b: { type: "boolean" } } },
            ],
          },
        },
        required: ["p", "name", "maybe", "both"],
      },
      { p: { x: 1 }, name: "example", maybe: 2, both: { a: "example", b: false } },
    ],
    [
      "type lists take the first that is not null; a shell command array",
      {
        type: "object",
        properties: {
          t: { type: ["null", "string"] },
          command: { type: "array", items: { type: "string" }, minItems: 1 },
        },
        required: ["t", "command"],
      },
      { t: "example", command: ["example"] },
    ],
  ])("%s", (_name, schema, expected) => {
    const { value, errors } = valid(schema);
    expect(errors).toEqual([]);
    expect(value).toEqual(expected);
  });

  test("a recursive $ref ends (at the depth bound), and what it makes is still checked", () => {
    const tree = {
      type: "object",
      properties: { kids: { type: "array", items: { $ref: "#" } } },
      required: ["kids"],
    };
    expect(valid(tree)).toEqual({ value: { kids: [] }, errors: [] });
  });
});

describe("schemaErrors", () => {
  test("names each violation with its JSON pointer", () => {
    const schema = {
      type: "object",
      properties: {
        cmd: { type: "string" },
        n: { type: "integer", maximum: 3 },
        e: { enum: ["a"] },
        list: { type: "array", items: { type: "string" }, maxItems: 1 },
      },
      required: ["cmd"],
      additionalProperties: false,
    };
    expect(schemaErrors(schema, { n: 4.5, e: "b", list: [1, "x"], extra: true })).toEqual([
      '/: "cmd" is required',
      "/n: expected integer, got number",
      '/e: must be one of ["a"]',
      "/list: more than 1 items",
      "/list/0: expected string, got integer",
      '/: "extra" is not allowed',
    ]);
    expect(schemaErrors(schema, "x")).toEqual(["/: expected object, got string"]);
    expect(schemaErrors({ oneOf: [{ type: "integer" }, { type: "number" }] }, 1)).toEqual([
      "/: must match exactly one oneOf branch",
    ]);
    expect(schemaErrors({ not: { type: "string" } }, "s")).toEqual(['/: matches its "not"']);
  });
});

/** Random schemas from the keywords tools use; `exampleOf` must satisfy every one. */
const leaf = fc.oneof(
  fc.record(
    {
      type: fc.constant("string"),
      minLength: fc.nat(5),
      maxLength: fc.integer({ min: 5, max: 12 }),
    },
    { requiredKeys: ["type"] },
  ),
  fc.record(
    {
      type: fc.constant("integer"),
      minimum: fc.integer({ min: -50, max: 50 }),
      maximum: fc.integer({ min: 51, max: 200 }),
      multipleOf: fc.integer({ min: 1, max: 7 }),
    },
    { requiredKeys: ["type"] },
  ),
  fc.record(
    { type: fc.constant("number"), exclusiveMinimum: fc.integer({ min: -5, max: 5 }) },
    { requiredKeys: ["type"] },
  ),
  fc.constant({ type: "boolean" }),
  fc.constant({ type: "null" }),
  fc
    .array(fc.oneof(fc.string(), fc.integer()), { minLength: 1, maxLength: 3 })
    .map((e) => ({ enum: e })),
  fc.jsonValue().map((v) => ({ const: v })),
  fc
    .constantFrom("date-time", "date", "email", "uri", "uuid", "ipv4")
    .map((f) => ({ type: "string", format: f })),
);
const schemas = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc
      .dictionary(fc.string({ minLength: 1, maxLength: 6 }), tie("node"), { maxKeys: 4 })
      .chain((props) =>
        fc.record({
          type: fc.constant("object"),
          properties: fc.constant(props),
          required: fc.subarray(Object.keys(props)),
          additionalProperties: fc.boolean(),
        }),
      ),
    fc.record({ type: fc.constant("array"), items: tie("node"), minItems: fc.nat(3) }),
    fc.array(tie("node"), { minLength: 1, maxLength: 3 }).map((b) => ({ anyOf: b })),
    fc.tuple(tie("node"), leaf).map(([a, b]) => ({ anyOf: [{ type: "null" }, a, b] })),
  ),
}));

test("property: what exampleOf makes, schemaErrors accepts", () => {
  fc.assert(
    fc.property(schemas.node, (schema) => {
      expect({ schema, ...valid(schema) }).toMatchObject({ errors: [] });
    }),
    { numRuns: 500 },
  );
});
