import { describe, expect, test } from "bun:test";
import { splitParts } from "../../../src/gpu/gguf/split.ts";

describe("splitParts", () => {
  test("a split model's every part, whichever part is named", () => {
    const all = [
      "/m/q-00001-of-00003.gguf",
      "/m/q-00002-of-00003.gguf",
      "/m/q-00003-of-00003.gguf",
    ];
    expect(splitParts("/m/q-00001-of-00003.gguf")).toEqual(all);
    expect(splitParts("/m/q-00002-of-00003.gguf")).toEqual(all);
  });

  test("a single file, or a name that only looks split, is itself", () => {
    expect(splitParts("/m/q.gguf")).toEqual(["/m/q.gguf"]);
    expect(splitParts("q-00004-of-00003.gguf")).toEqual(["q-00004-of-00003.gguf"]);
    expect(splitParts("rel/q-00001-of-00002.gguf")).toEqual([
      "rel/q-00001-of-00002.gguf",
      "rel/q-00002-of-00002.gguf",
    ]);
  });
});
