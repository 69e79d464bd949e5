/** `[models.ID] capabilities`: known names only, each once, and never embedding with completion. */
import { describe, expect, test } from "bun:test";
import { config } from "../support/config.ts";

const model = (caps: string) => `
[models.m]
cmd = "run --port \${PORT}"
capabilities = ${caps}
`;

describe("capabilities in the config", () => {
  test("a list of known capabilities is kept as written; none is absent", () => {
    expect(config(model('["completion", "thinking", "vision"]')).models.m!.capabilities).toEqual([
      "completion",
      "thinking",
      "vision",
    ]);
    expect(config(model("[]")).models.m!.capabilities).toBeUndefined();
  });

  test("unknown names, repeats and embedding with completion are refused at file:line:col", () => {
    expect(() => config(model('["completion", "chat"]'))).toThrow(
      /:4:\d+: models\.m\.capabilities\[1\]: expected one of "completion", "tools", "embedding", "thinking", "vision", "insert", got "chat"/,
    );
    expect(() => config(model('["tools", "tools"]'))).toThrow(
      /models\.m\.capabilities: lists a capability more than once/,
    );
    expect(() => config(model('["embedding", "completion"]'))).toThrow(
      /models\.m\.capabilities: an embedding model cannot also claim "completion"/,
    );
  });
});
