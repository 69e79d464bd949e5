/** The reload diff (src/runtime/reload-diff.ts): every kind of change, configs through the loader. */
import { describe, expect, test } from "bun:test";
import { changesJson, diffConfig, isEmpty } from "../../src/runtime/reload-diff.ts";
import { config } from "../support/config.ts";

const BASE = `
[server]
listen = ["127.0.0.1:0"]

[models.a]
cmd = "run-a --port \${PORT}"
proxy = "http://127.0.0.1:\${PORT}"
ttl_s = 60

[models.b]
cmd = "run-b"
proxy = "http://127.0.0.1:9"
`;

const diff = (before: string, after: string) => diffConfig(config(before), config(after));

describe("diffConfig", () => {
  test("the same text is no change", () => {
    expect(isEmpty(diff(BASE, BASE))).toBe(true);
  });

  test("a port the loader handed out elsewhere is no change (compared before the port is filled in)", () => {
    const before = config(BASE);
    const after = config(BASE, { isPortFree: (p) => p > 10005 });
    expect(after.models.a!.port).not.toBe(before.models.a!.port);
    expect(isEmpty(diffConfig(before, after))).toBe(true);
  });

  test("live keys: applied at once, no restart", () => {
    const c = diff(
      BASE,
      BASE.replace(
        "ttl_s = 60",
        'ttl_s = 5\nconcurrency_limit = 2\naliases = ["x"]\nest_vram_gb = 3',
      ),
    );
    expect(c.changed).toEqual({
      a: { kind: "live", keys: ["aliases", "ttl_s", "concurrency_limit", "est_vram_gb"] },
    });
    expect(c.applied).toEqual([]);
    expect(changesJson(c).updated).toEqual({
      a: ["aliases", "ttl_s", "concurrency_limit", "est_vram_gb"],
    });
  });

  test.each([
    ["cmd", 'cmd = "run-b --other"'],
    ["env", 'cmd = "run-b"\nenv = { X = "1" }'],
    ["check_endpoint", 'cmd = "run-b"\ncheck_endpoint = "/ready"'],
    ["cmd_stop", 'cmd = "run-b"\ncmd_stop = "kill-it"'],
    ["stop_timeout_s", 'cmd = "run-b"\nstop_timeout_s = 3'],
  ])("%s needs a new process", (key, line) => {
    const c = diff(BASE, BASE.replace('cmd = "run-b"', line));
    expect(c.changed.b?.kind).toBe("restart");
    expect(c.changed.b?.keys).toContain(key);
    expect(changesJson(c).restart_pending).toEqual({ b: c.changed.b!.keys });
  });

  test("a restart key with live keys lists both, and is a restart", () => {
    const c = diff(BASE, BASE.replace('cmd = "run-b"', 'cmd = "run-b2"\nttl_s = 9'));
    expect(c.changed.b).toEqual({ kind: "restart", keys: ["cmd", "ttl_s"] });
  });

  test("added and removed models", () => {
    const after = `${BASE.replace(/\[models\.b\][^[]*/, "")}\n[models.c]\ncmd = "run-c"\nproxy = "http://127.0.0.1:9"\n`;
    const c = diff(BASE, after);
    expect(c.added).toEqual(["c"]);
    expect(c.removed).toEqual(["b"]);
    expect(c.changed).toEqual({});
  });

  test("scheduler, groups, budgets and api keys apply to the next decision or request", () => {
    const after = `[scheduler]\nhold_ms = 5\n[resources]\nvram_budget_gb = 24\n[groups.g]\nmembers = ["a", "b"]\nswap = false\n${BASE.replace('listen = ["127.0.0.1:0"]', 'listen = ["127.0.0.1:0"]\napi_keys = ["k"]')}`;
    const c = diff(BASE, after);
    expect(c.applied).toEqual([
      "scheduler",
      "groups",
      "resources.vram_budget_gb",
      "server.api_keys",
    ]);
    // Group membership is a model's live key too.
    expect(c.changed.a).toEqual({ kind: "live", keys: ["group"] });
    expect(c.needsRestart).toEqual([]);
  });

  test("listener changes are reported as needing a restart", () => {
    const c = diff(
      BASE,
      BASE.replace(
        'listen = ["127.0.0.1:0"]',
        'listen = ["127.0.0.1:1"]\nmetrics_listen = "127.0.0.1:2"\nwatch_config = false',
      ),
    );
    expect(c.needsRestart).toEqual([
      "server.listen",
      "server.metrics_listen",
      "server.watch_config",
    ]);
    expect(c.applied).toEqual([]);
    expect(changesJson(c).needs_restart).toEqual(c.needsRestart);
  });

  test("peers", () => {
    const c = diff(
      BASE,
      `${BASE}\n[peers.box2]\nurl = "http://10.0.0.2:8080"\nkind = "openai"\nmodels = ["m"]\n`,
    );
    expect(c.peers).toBe(true);
    expect(isEmpty(diff(BASE, BASE))).toBe(true);
  });

  test("a minted variant is kept unless its base is removed", () => {
    const before = config(BASE);
    before.models["a?ctx=8192"] = {
      ...before.models.a!,
      id: "a?ctx=8192",
      variantOf: { base: "a", ctx: 8192 },
    };
    expect(isEmpty(diffConfig(before, config(BASE)))).toBe(true);
    const c = diffConfig(before, config(BASE.replace(/\[models\.a\][^[]*/, "")));
    expect(c.removed.sort()).toEqual(["a", "a?ctx=8192"]);
  });
});
