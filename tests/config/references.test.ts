import { describe, expect, test } from "bun:test";
import { matchesPattern, modelIdFor } from "../../src/config/aliases.ts";
import { DEFAULT_GROUP } from "../../src/config/index.ts";
import { errors, load } from "./support.ts";

describe("aliases", () => {
  test("map to their model", () => {
    const config = load(
      `[models.a]\ncmd = "a"\naliases = ["x", "y"]\n[models.b]\ncmd = "b"\naliases = ["z"]\n`,
    );
    expect(config.aliases).toEqual({ x: "a", y: "a", z: "b" });
  });

  test("must be unique and never a model id", () => {
    const text = `[models.a]
cmd = "a"
aliases = ["gpt", "b", "gpt"]
[models.b]
cmd = "b"
aliases = ["gpt", "a"]
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:3:19: models.a.aliases[1]: alias "b" is already a model id',
      'quartermaster.toml:3:24: models.a.aliases[2]: alias "gpt" is listed twice',
      'quartermaster.toml:6:12: models.b.aliases[0]: alias "gpt" is already used by model "a"',
      'quartermaster.toml:6:19: models.b.aliases[1]: alias "a" is already a model id',
    ]);
  });
});

describe("alias patterns", () => {
  const text = `[models.sonnet]
cmd = "a"
aliases = ["claude-sonnet-*", "claude-haiku-3"]
[models.fast]
cmd = "b"
aliases = ["claude-*haiku*", "claude-*"]
[models."a.b"]
cmd = "c"
aliases = ["x.y*"]
`;
  const config = load(text);

  test("are kept apart from exact aliases, in file order", () => {
    expect(config.aliases).toEqual({ "claude-haiku-3": "sonnet" });
    expect(config.aliasPatterns).toEqual([
      { pattern: "claude-sonnet-*", id: "sonnet" },
      { pattern: "claude-*haiku*", id: "fast" },
      { pattern: "claude-*", id: "fast" },
      { pattern: "x.y*", id: "a.b" },
    ]);
  });

  test("an id, then an exact alias, then the first pattern that matches", () => {
    const cases: [string, string | undefined][] = [
      ["sonnet", "sonnet"],
      ["claude-haiku-3", "sonnet"],
      ["claude-sonnet-4-5-20250929", "sonnet"],
      ["claude-3-5-haiku-20241022", "fast"],
      ["claude-opus-4", "fast"],
      ["claude-", "fast"],
      ["claude", undefined],
      ["x.y/any thing", "a.b"],
      // Every other character is literal: "." is not "any character".
      ["xzy", undefined],
      ["gpt-4o", undefined],
      // A variant request is resolved by its base, never by a pattern as a whole.
      ["claude-opus-4?ctx=8192", undefined],
    ];
    for (const [name, id] of cases) expect([name, modelIdFor(config, name)]).toEqual([name, id]);
  });

  test("matching: literal parts in order, none overlapping; a long hostile name is quick", () => {
    const cases: [string, string, boolean][] = [
      ["a*b", "ab", true],
      ["a*b", "aXb", true],
      ["a*b", "aXbY", false],
      ["ab*ba", "aba", false],
      ["ab*ba", "abba", true],
      ["*x*", "x", true],
      ["*x*", "y", false],
      ["a**b", "ab", true],
      ["a*b*c", "acb", false],
      ["a*b*c", "abxbc", true],
      ["*", "", true],
    ];
    for (const [pattern, name, hit] of cases) {
      expect([pattern, name, matchesPattern(pattern, name)]).toEqual([pattern, name, hit]);
    }
    const hostile = "a".repeat(100_000);
    expect(matchesPattern("a*a*a*a*a*a*a*a*b", hostile)).toBe(false);
  });

  test("a pattern must not ask for a variant, and is unique like any alias", () => {
    expect(errors(`[models.a]\ncmd = "a"\naliases = ["a-*?ctx=1", "b-*", "b-*", ""]\n`)).toEqual([
      'quartermaster.toml:3:12: models.a.aliases[0]: alias pattern "a-*?ctx=1" must not contain "?ctx=" (that asks for a variant)',
      'quartermaster.toml:3:32: models.a.aliases[2]: alias "b-*" is listed twice',
      "quartermaster.toml:3:39: models.a.aliases[3]: an alias must not be empty",
    ]);
  });
});

describe("request filters", () => {
  test("model and stream can be neither stripped nor set", () => {
    const text = `[models.a]
cmd = "a"
strip_params = ["top_k", "model"]
set_params = { stream = false, model = "x", seed = 1 }
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:3:26: models.a.strip_params[1]: "model" cannot be stripped: qm routes by it',
      'quartermaster.toml:4:16: models.a.set_params.stream: "stream" cannot be set: qm routes by it',
      'quartermaster.toml:4:32: models.a.set_params.model: "model" cannot be set: qm routes by it (use use_model_name)',
    ]);
  });
});

describe("groups", () => {
  test("members are defined models, each in at most one group", () => {
    const text = `[models.qwen-7b]
cmd = "q"
[models.llama]
cmd = "l"
[groups.one]
members = ["qwen-7b", "qwen-7c"]
[groups.two]
members = ["llama", "qwen-7b", "llama"]
[groups."(default)"]
members = []
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:6:23: groups.one.members[1]: unknown model "qwen-7c" (did you mean "qwen-7b"?)',
      'quartermaster.toml:8:21: groups.two.members[1]: model "qwen-7b" is already in group "one"',
      'quartermaster.toml:8:32: groups.two.members[2]: "llama" is listed twice',
      'quartermaster.toml:9:1: groups."(default)": "(default)" is the implicit group of ungrouped models',
    ]);
  });

  test("ungrouped models form the default group, which exists only when it has members", () => {
    const config = load(
      `[models.a]\ncmd = "a"\n[models.b]\ncmd = "b"\n[groups.g]\nmembers = ["b"]\npool = "ram"\n`,
    );
    expect(config.models.a?.group).toBe(DEFAULT_GROUP);
    expect(config.models.b?.group).toBe("g");
    expect(Object.keys(config.groups).sort()).toEqual([DEFAULT_GROUP, "g"].sort());
    expect(config.groups[DEFAULT_GROUP]?.members).toEqual(["a"]);
    expect(config.groups.g?.pool).toBe("ram");
    const allGrouped = load(`[models.a]\ncmd = "a"\n[groups.g]\nmembers = ["a"]\n`);
    expect(Object.keys(allGrouped.groups)).toEqual(["g"]);
  });
});

describe("matrix", () => {
  test("set members and evict_cost keys must be models", () => {
    const text = `[models.embed]
cmd = "e"
[matrix]
sets = [["embed", "nope"], ["embde"]]
evict_cost = { embed = 1, "llama-70b" = 30 }
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:4:19: matrix.sets[0][1]: unknown model "nope"',
      'quartermaster.toml:4:29: matrix.sets[1][0]: unknown model "embde" (did you mean "embed"?)',
      'quartermaster.toml:5:27: matrix.evict_cost.llama-70b: unknown model "llama-70b"',
    ]);
  });
});

describe("server addresses", () => {
  test("host:port, IPv6 in brackets, port 0 allowed, at least one listen address", () => {
    const config = load(`[server]\nlisten = ["127.0.0.1:0", "[::1]:8080", "localhost:1"]\n`);
    expect(config.server.listen).toEqual(["127.0.0.1:0", "[::1]:8080", "localhost:1"]);
    expect(errors(`[server]\nlisten = []\nmetrics_listen = "9100"\n`)).toEqual([
      "quartermaster.toml:2:1: server.listen: at least one listen address is required",
      'quartermaster.toml:3:1: server.metrics_listen: expected "host:port" (IPv6 as "[::1]:8080") or "", got "9100"',
    ]);
    expect(errors(`[server]\nlisten = ["::1:80", "h:99999", "h:1", "h:1"]\n`)).toEqual([
      'quartermaster.toml:2:11: server.listen[0]: expected "host:port" (IPv6 as "[::1]:8080"), got "::1:80"',
      'quartermaster.toml:2:21: server.listen[1]: expected "host:port" (IPv6 as "[::1]:8080"), got "h:99999"',
      'quartermaster.toml:2:39: server.listen[3]: "h:1" is listed twice',
    ]);
  });
});

describe("model strings", () => {
  test("cmd must split into at least one word; quoting errors point at cmd", () => {
    const text = `[models.a]
cmd = "   "
[models.b]
cmd = """
# just a comment
"""
[models.c]
cmd = "server 'unterminated"
`;
    expect(errors(text)).toEqual([
      "quartermaster.toml:2:1: models.a.cmd: must not be empty",
      "quartermaster.toml:4:1: models.b.cmd: must not be empty",
      "quartermaster.toml:8:1: models.c.cmd: unterminated single quote in command",
    ]);
  });

  test("proxy is an http(s) URL without trailing slash; check_endpoint a path or none", () => {
    const text = `[models.a]
cmd = "a"
proxy = "localhost:8080"
check_endpoint = "health"
[models.b]
cmd = "b"
proxy = "https://h:1//"
check_endpoint = "none"
[peers.p]
url = "h:1"
models = ["x"]
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:3:1: models.a.proxy: expected an http(s) URL, got "localhost:8080"',
      'quartermaster.toml:4:1: models.a.check_endpoint: must start with "/" or be "none", got "health"',
      'quartermaster.toml:10:1: peers.p.url: expected an http(s) URL, got "h:1"',
    ]);
    const ok = load(`[models.b]\ncmd = "b"\nproxy = "https://h:1//"\ncheck_endpoint = "none"\n`);
    expect(ok.models.b?.proxy).toBe("https://h:1");
    expect(ok.models.b?.checkEndpoint).toBeNull();
  });
});
