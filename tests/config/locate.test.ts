import { describe, expect, test } from "bun:test";
import { locateKeys } from "../../src/config/locate.ts";

describe("locateKeys", () => {
  const text = `# comment [not.a.header]
top = "value # not a comment"
[server]
listen = ["a", "b"]   # trailing
  indented = 1
[models."qwen2.5"]
cmd = """
multi = "line
"""
env = { A = "1", "B.C" = { D = 2 } }
dotted.key.here = 'x'
[ models . 'lit.eral' ]
ttl_s = 1
[[arr]]
x = 1
[[arr]]
x = 2
nested = [[1, 2], [3,
  4]]
"esc\\"aped\\u0041" = 1
`;
  const map = locateKeys(text);

  test("keys, headers and implicit tables", () => {
    expect(map.exact(["top"])).toEqual({ line: 2, col: 1 });
    expect(map.exact(["server"])).toEqual({ line: 3, col: 1 });
    expect(map.exact(["server", "listen"])).toEqual({ line: 4, col: 1 });
    expect(map.exact(["server", "indented"])).toEqual({ line: 5, col: 3 });
    expect(map.exact(["models"])).toEqual({ line: 6, col: 1 });
    expect(map.exact(["models", "qwen2.5"])).toEqual({ line: 6, col: 1 });
    expect(map.exact(["models", "lit.eral"])).toEqual({ line: 12, col: 1 });
    expect(map.exact(["models", "lit.eral", "ttl_s"])).toEqual({ line: 13, col: 1 });
  });

  test("strings never hide or fake keys", () => {
    expect(map.exact(["models", "qwen2.5", "cmd"])).toEqual({ line: 7, col: 1 });
    expect(map.exact(["models", "qwen2.5", "multi"])).toBeUndefined();
    expect(map.exact(["not"])).toBeUndefined();
    expect(map.exact(['esc"apedA'])).toBeUndefined(); // it lives under [[arr]]
    expect(map.exact(["arr", "1", 'esc"apedA'])).toEqual({ line: 20, col: 1 });
  });

  test("array elements, inline tables and dotted keys", () => {
    expect(map.exact(["server", "listen", 0])).toEqual({ line: 4, col: 11 });
    expect(map.exact(["server", "listen", 1])).toEqual({ line: 4, col: 16 });
    expect(map.exact(["models", "qwen2.5", "env", "A"])).toEqual({ line: 10, col: 9 });
    expect(map.exact(["models", "qwen2.5", "env", "B.C", "D"])).toEqual({ line: 10, col: 28 });
    expect(map.exact(["models", "qwen2.5", "dotted", "key"])).toEqual({ line: 11, col: 1 });
    expect(map.exact(["arr", "1", "nested", 1, 1])).toEqual({ line: 19, col: 3 });
  });

  test("arrays of tables are indexed", () => {
    expect(map.exact(["arr", "0", "x"])).toEqual({ line: 15, col: 1 });
    expect(map.exact(["arr", "1", "x"])).toEqual({ line: 17, col: 1 });
  });

  test("find falls back to the nearest written ancestor, then to the file start", () => {
    expect(map.find(["models", "qwen2.5", "ttl_s"])).toEqual({ line: 6, col: 1 });
    expect(map.find(["nowhere", "at", "all"])).toEqual({ line: 1, col: 1 });
  });
});
