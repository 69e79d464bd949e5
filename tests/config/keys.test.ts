/** `[keys.NAME]` and `[store]` through the real loader: defaults, hashing, and every refusal. */
import { describe, expect, test } from "bun:test";
import { sha256Hex } from "../../src/shared/digest.ts";
import { errors, load } from "./support.ts";

const HEX = "ab".repeat(32);

describe("[keys.NAME]", () => {
  test("a literal key is kept only as its SHA-256; the defaults fill the rest", () => {
    const c = load(`[keys.alice]\nkey = "sk-alice"\n`);
    expect(c.keys).toEqual({
      alice: {
        name: "alice",
        sha256: sha256Hex("sk-alice"),
        models: ["*"],
        admin: false,
        priority: "normal",
        maxConcurrency: 0,
        maxQueued: 0,
        rpm: 0,
        tokensPerMin: 0,
      },
    });
    expect(JSON.stringify(c)).not.toContain("sk-alice");
  });

  test("key_sha256 is taken as given, lower-cased; every setting maps", () => {
    const c = load(`[keys.ci]
key_sha256 = "${HEX.toUpperCase()}"
models = ["qwen-*", "embed"]
admin = true
priority = "batch"
max_concurrency = 2
max_queued = 10
rpm = 60
tokens_per_min = 1000
`);
    expect(c.keys.ci).toEqual({
      name: "ci",
      sha256: HEX,
      models: ["qwen-*", "embed"],
      admin: true,
      priority: "batch",
      maxConcurrency: 2,
      maxQueued: 10,
      rpm: 60,
      tokensPerMin: 1000,
    });
  });

  test("none configured: no keys", () => {
    expect(load("").keys).toEqual({});
  });

  test("exactly one of key and key_sha256", () => {
    expect(errors(`[keys.a]\nmodels = []\n`)).toEqual([
      "quartermaster.toml:1:1: keys.a: needs key or key_sha256 (qm keys new NAME prints a new key and its table)",
    ]);
    expect(errors(`[keys.a]\nkey = "x"\nkey_sha256 = "${HEX}"\n`)).toEqual([
      "quartermaster.toml:1:1: keys.a: has both key and key_sha256: keep one (key_sha256 keeps the secret out of the file)",
    ]);
  });

  test("key_sha256 must be 64 hex digits", () => {
    expect(errors(`[keys.a]\nkey_sha256 = "abc"\n`)).toEqual([
      "quartermaster.toml:2:1: keys.a.key_sha256: must be 64 hex digits (qm keys hash prints it for a key)",
    ]);
  });

  test("admin and anonymous are taken; names are plain", () => {
    expect(errors(`[keys.admin]\nkey = "x"\n`)[0]).toContain('"admin" is taken');
    expect(errors(`[keys.anonymous]\nkey = "x"\n`)[0]).toContain('"anonymous" is taken');
    expect(errors(`[keys."a b"]\nkey = "x"\n`)[0]).toContain("a key's name is 1 to 64 letters");
    expect(errors(`[keys."${"n".repeat(65)}"]\nkey = "x"\n`)[0]).toContain("1 to 64");
  });

  test("no two keys are the same key, here or in server.api_keys", () => {
    expect(errors(`[keys.a]\nkey = "x"\n[keys.b]\nkey_sha256 = "${sha256Hex("x")}"\n`)).toEqual([
      "quartermaster.toml:3:1: keys.b: is the same key as keys.a: each key must be different",
    ]);
    expect(errors(`[server]\napi_keys = ["x"]\n[keys.a]\nkey = "x"\n`)).toEqual([
      "quartermaster.toml:3:1: keys.a: is the same key as server.api_keys: each key must be different",
    ]);
  });

  test("bad values are named by key", () => {
    expect(errors(`[keys.a]\nkey = "x"\npriority = "urgent"\nrpm = -1\nsecret = 1\n`)).toEqual([
      'quartermaster.toml:3:1: keys.a.priority: expected one of "interactive", "normal", "batch", got "urgent"',
      "quartermaster.toml:4:1: keys.a.rpm: must not be negative, got -1",
      'quartermaster.toml:5:1: keys.a.secret: unknown key "secret"',
    ]);
  });
});

describe("[store] and capture_persist", () => {
  test("defaults: on, 30 days, 256 MB; captures in memory only", () => {
    const c = load("");
    expect(c.store).toEqual({
      enabled: true,
      maxAgeMs: 30 * 24 * 3600 * 1000,
      maxBytes: 256 * 1024 * 1024,
    });
    expect(c.activity.capturePersist).toBe(false);
  });

  test("set", () => {
    const c = load(
      `[store]\nenabled = false\nmax_age_days = 0.5\nmax_mb = 8\n[activity]\ncapture_persist = true\n`,
    );
    expect(c.store).toEqual({ enabled: false, maxAgeMs: 12 * 3600 * 1000, maxBytes: 8 << 20 });
    expect(c.activity.capturePersist).toBe(true);
  });

  test("bounds", () => {
    expect(errors(`[store]\nmax_mb = 0\n`)).toEqual([
      "quartermaster.toml:2:1: store.max_mb: must be at least 1, got 0",
    ]);
  });
});
