/** Request bodies against a typebox schema: the first problem, its field, and its words. */
import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { problemOf } from "../../../src/api/request/schema.ts";

const maybe = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) =>
  Type.Optional(Type.Union([t, Type.Null()]));

const Body = Type.Object({
  a: Type.Number({ error: "must be a number" }),
  list: maybe(Type.Array(Type.Object({ x: Type.String() }), { error: "must be a list" })),
  f: maybe(
    Type.Object(
      { name: Type.String({ minLength: 1 }) },
      { error: "must be a string", errorField: "name" },
    ),
  ),
  "odd/key": Type.Optional(Type.Boolean()),
});

describe("problemOf", () => {
  test("fits: null", () => {
    expect(problemOf(Body, { a: 1, list: null, f: { name: "n" } })).toBeNull();
  });

  test.each([
    [{}, { field: "a", message: "must be a number", missing: true }],
    [{ a: "1" }, { field: "a", message: "must be a number", missing: false }],
    // A field that may be null: the problem of the variant the value came closest to.
    [
      { a: 1, list: 3 },
      { field: "list", message: "must be a list", missing: false },
    ],
    [
      { a: 1, list: [{ x: 1 }] },
      { field: "list[0].x", message: "Expected string", missing: false },
    ],
    // An object whose point is one field reports at that field.
    [
      { a: 1, f: 3 },
      { field: "f.name", message: "must be a string", missing: false },
    ],
    [
      { a: 1, "odd/key": 1 },
      { field: "odd/key", message: "Expected boolean", missing: false },
    ],
  ] as [unknown, unknown][])("%j → %j", (body, want) => {
    expect(problemOf(Body, body)).toEqual(want as never);
  });
});
