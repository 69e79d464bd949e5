import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../src/config/index.ts";
import { config } from "../support/config.ts";
import { errors, issues, load } from "./support.ts";

describe("unknown keys", () => {
  test("are reported at every level with line, column and a suggestion", () => {
    const text = `bogus = 1
[server]
listn = ["127.0.0.1:8080"]
[scheduler]
hold_m = 1
[resources]
  vram_budget = 1
[router]
polcy = "group"
[groups.g]
member = []
[matrix]
set = []
[models.m]
cmd = "x"
ttl = 10
[peers.p]
url = "http://h"
kindd = "qm"
[modles.x]
cmd = "y"
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:1:1: bogus: unknown key "bogus"',
      'quartermaster.toml:3:1: server.listn: unknown key "listn" (did you mean "listen"?)',
      'quartermaster.toml:5:1: scheduler.hold_m: unknown key "hold_m" (did you mean "hold_ms"?)',
      'quartermaster.toml:7:3: resources.vram_budget: unknown key "vram_budget" (did you mean "vram_budget_gb"?)',
      'quartermaster.toml:9:1: router.polcy: unknown key "polcy" (did you mean "policy"?)',
      'quartermaster.toml:11:1: groups.g.member: unknown key "member" (did you mean "members"?)',
      'quartermaster.toml:13:1: matrix.set: unknown key "set" (did you mean "sets"?)',
      'quartermaster.toml:16:1: models.m.ttl: unknown key "ttl" (did you mean "ttl_s"?)',
      'quartermaster.toml:19:1: peers.p.kindd: unknown key "kindd" (did you mean "kind"?)',
      'quartermaster.toml:20:1: modles: unknown key "modles" (did you mean "models"?)',
    ]);
  });

  test("inside inline tables, dotted keys and quoted headers", () => {
    const text = `[models]
a = { cmd = "x", tll_s = 1 }
b.cmd = "y"
b.stop_timeout = 3
[models."qwen2.5"]
cmd = "z"
"ttl" = 1
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:2:18: models.a.tll_s: unknown key "tll_s" (did you mean "ttl_s"?)',
      'quartermaster.toml:4:1: models.b.stop_timeout: unknown key "stop_timeout" (did you mean "stop_timeout_s"?)',
      'quartermaster.toml:7:1: models."qwen2.5".ttl: unknown key "ttl" (did you mean "ttl_s"?)',
    ]);
  });
});

describe("type errors", () => {
  test("a string where a number belongs, on line 14 of a typical config", () => {
    const text = `[server]
listen = ["127.0.0.1:8080"]

[scheduler]
hold_ms = 10000

[resources]
vram_budget_gb = 24

[models.qwen-7b]
cmd = "llama-server --port \${PORT}"
aliases = ["gpt-4o-mini"]
est_vram_gb = 6.5
ttl_s = "ten"
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:14:1: models.qwen-7b.ttl_s: expected a number, got "ten"',
    ]);
    expect(issues(text)).toEqual([
      {
        file: "quartermaster.toml",
        line: 14,
        col: 1,
        key: "models.qwen-7b.ttl_s",
        message: 'expected a number, got "ten"',
      },
    ]);
  });

  test("each kind of value mismatch has its own message and exact position", () => {
    const text = `[server]
start_port = 70000
log_level = "loud"
api_keys = [""]
[scheduler]
   patience_ms = -5
[groups.g]
swap = "yes"
[models.m]
cmd = "x"
concurrency_limit = 1.5
aliases = ["a", 3]
env = { A = "1", B = 2 }
ttl_s = 1979-05-27
unlisted = []
`;
    expect(errors(text)).toEqual([
      "quartermaster.toml:2:1: server.start_port: must be at most 65535, got 70000",
      'quartermaster.toml:3:1: server.log_level: expected one of "debug", "info", "warn", "error", got "loud"',
      "quartermaster.toml:4:13: server.api_keys[0]: must not be empty",
      "quartermaster.toml:6:4: scheduler.patience_ms: must not be negative, got -5",
      'quartermaster.toml:8:1: groups.g.swap: expected true or false, got "yes"',
      "quartermaster.toml:11:1: models.m.concurrency_limit: expected an integer, got 1.5",
      "quartermaster.toml:12:17: models.m.aliases[1]: expected a string, got 3",
      "quartermaster.toml:13:18: models.m.env.B: expected a string, got 2",
      "quartermaster.toml:14:1: models.m.ttl_s: expected a number, got a date",
      "quartermaster.toml:15:1: models.m.unlisted: expected true or false, got an array",
    ]);
  });

  test("a table that is not a table, and a missing required key at its table header", () => {
    const text = `server = 5
[[models]]
cmd = "x"
[peers.p]
kind = "qm"
[models2]
`;
    expect(errors(text)).toEqual(
      [
        "quartermaster.toml:1:1: server: expected a table, got 5",
        'quartermaster.toml:4:1: peers.p.url: missing required key "url"',
        'quartermaster.toml:6:1: models2: unknown key "models2" (did you mean "models"?)',
        "quartermaster.toml:2:1: models: expected a table, got an array",
      ].sort(byLine),
    );
  });

  test("a table where a scalar union belongs (a macro, an enum) is an issue, not a crash", () => {
    expect(
      errors(
        '[macros.nested]\nx = 1\n[macros]\nok = "y"\n[models.a]\ncmd = "x"\nresponses_api = { a = 1 }\n',
      ),
    ).toEqual([
      "quartermaster.toml:1:1: macros.nested: expected a string or a number or true or false, got a table",
      'quartermaster.toml:7:1: models.a.responses_api: expected one of "translate", "native", got a table',
    ]);
  });

  test("a model without cmd points at the model's header", () => {
    expect(errors(`[server]\n\n[models.m]\nproxy = "http://h:1"\n`)).toEqual([
      'quartermaster.toml:3:1: models.m.cmd: missing required key "cmd"',
    ]);
  });
});

function byLine(a: string, b: string): number {
  const line = (s: string) => Number(s.split(":")[1]);
  return line(a) - line(b);
}

describe("collecting", () => {
  test("every problem is reported at once, in file order", () => {
    const text = `[server]
listen = ["nonsense"]
[models.a]
cmd = ""
[models.b]
cmd = "x"
proxy = "ftp://h"
[groups.g]
members = ["c"]
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:2:11: server.listen[0]: expected "host:port" (IPv6 as "[::1]:8080"), got "nonsense"',
      "quartermaster.toml:4:1: models.a.cmd: must not be empty",
      'quartermaster.toml:7:1: models.b.proxy: expected an http(s) URL, got "ftp://h"',
      'quartermaster.toml:9:12: groups.g.members[0]: unknown model "c"',
    ]);
  });

  test("ConfigError carries the issues and formats one line per issue", () => {
    let caught: unknown;
    try {
      load(`[server]\nstart_port = "x"\nhold = 1\n`);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.issues.length).toBe(2);
    expect(error.format()).toBe(
      [
        'quartermaster.toml:2:1: server.start_port: expected an integer, got "x"',
        'quartermaster.toml:3:1: server.hold: unknown key "hold"',
      ].join("\n"),
    );
    expect(error.message).toBe(error.format());
  });
});

describe("TOML syntax errors", () => {
  test("carry smol-toml's line and column, the key they are in, and a hint", () => {
    expect(issues(`[server]\nlisten = \n`)).toEqual([
      {
        file: "quartermaster.toml",
        line: 2,
        col: 10,
        key: "server.listen",
        message: "invalid value (hint: the value is missing)",
      },
    ]);
    expect(errors(`a = 1\n\na = 2\n`)).toEqual([
      "quartermaster.toml:3:1: a: trying to redefine an already defined table or value (hint: a is set twice (or its table appears twice); keep one)",
    ]);
  });

  test("the usual slips, each with the key (or the nearest table) and what to write", () => {
    const cases: [string, string][] = [
      [
        '[models.llama:8b]\ncmd = "x"\n',
        'quartermaster.toml:1:14: models.llama:8b: illegal character in key (hint: a key with characters other than A-Z a-z 0-9 _ - is quoted: [models."llama:8b"])',
      ],
      [
        "[models.a]\ncmd = llama-server --port 1\n",
        'quartermaster.toml:2:7: models.a.cmd: invalid value (hint: strings need quotes: cmd = "llama-server --port 1")',
      ],
      [
        '[server]\nlisten: "x"\n',
        'quartermaster.toml:2:7: server.listen: illegal character in key (hint: TOML sets a value with "=", not ":")',
      ],
      [
        '[models.a]\ncmd = "abc\n',
        'quartermaster.toml:2:11: models.a.cmd: control characters are not allowed in strings (hint: a string is not closed; text over several lines goes in """triple quotes""")',
      ],
      [
        '[models.a]\naliases = ["a", "b"\ncmd = "x"\n',
        "quartermaster.toml:3:1: models.a.aliases: expected comma or end of structure (hint: an [array] or { inline table } is not closed, or two of its items have no comma between them)",
      ],
      [
        "[models.a]\nttl_s = 10s\n",
        'quartermaster.toml:2:11: models.a.ttl_s: illegal character in numeric literal (hint: numbers take no units and use "." for decimals: ttl_s = 600, est_vram_gb = 6.5)',
      ],
      [
        "[models.a]\nunlisted = True\n",
        "quartermaster.toml:2:12: models.a.unlisted: invalid value (hint: true and false are written in lower case, without quotes)",
      ],
      [
        "[server]\napi_keys = [sk-1]\n",
        'quartermaster.toml:2:13: server.api_keys: invalid value (hint: strings in an array need quotes too: ["sk-1", "sk-2"])',
      ],
      [
        "[models.a]\n[models.a]\n",
        "quartermaster.toml:2:2: models.a: trying to redefine an already defined table or value (hint: [models.a] appears twice (or a key above already set it); keep one)",
      ],
      [
        '[models.a]\ncmd = "C:\\path"\n',
        "quartermaster.toml:2:11: models.a.cmd: unrecognised escape sequence (hint: a backslash in a \"string\" starts an escape: write \\\\ for one, or use a 'literal string')",
      ],
    ];
    for (const [text, want] of cases)
      expect({ text, got: errors(text) }).toEqual({ text, got: [want] });
  });

  test("keys that would reach Object.prototype are refused", () => {
    expect(issues(`[models.__proto__]\ncmd = "x"\n`)[0]?.line).toBe(1);
  });
});

describe("durations a timer cannot hold", () => {
  test("are refused at their line and column, with the largest value allowed", () => {
    const text = `[scheduler]
hold_ms = 99999999999
[models.m]
cmd = "x"
ttl_s = 2592000
stall_timeout_s = 1e12
`;
    expect(errors(text)).toEqual([
      "quartermaster.toml:2:1: scheduler.hold_ms: must be at most 2147483647, got 99999999999",
      "quartermaster.toml:5:1: models.m.ttl_s: must be at most 2147483, got 2592000",
      "quartermaster.toml:6:1: models.m.stall_timeout_s: must be at most 2147483, got 1000000000000",
    ]);
  });
});

describe("evict and sleep_level", () => {
  test("name the allowed values and the line", () => {
    expect(errors(`[models.a]\ncmd = "x"\nevict = "nap"\nsleep_level = 3\n`)).toEqual([
      'quartermaster.toml:3:1: models.a.evict: expected one of "stop", "sleep", got "nap"',
      "quartermaster.toml:4:1: models.a.sleep_level: expected one of 1, 2, got 3",
    ]);
  });

  test("default to stop and level 1; sleep and 2 are taken", () => {
    const c = config(
      `[models.a]\ncmd = "x"\n[models.b]\ncmd = "x"\nevict = "sleep"\nsleep_level = 2\n`,
    );
    expect([c.models.a!.evict, c.models.a!.sleepLevel]).toEqual(["stop", 1]);
    expect([c.models.b!.evict, c.models.b!.sleepLevel]).toEqual(["sleep", 2]);
  });
});
