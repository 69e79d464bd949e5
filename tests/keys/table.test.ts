/** The key table: hashed look-up, names, scopes, and what a reload revokes. */
import { describe, expect, test } from "bun:test";
import type { Config } from "../../src/config/types.ts";
import { KeyTable } from "../../src/keys/table.ts";
import { sha256Hex } from "../../src/shared/digest.ts";
import { config } from "../support/config.ts";

const MODELS = `[models.qwen-7b]\ncmd = "x"\naliases = ["gpt-4o-mini"]\n[models.llama]\ncmd = "x"\n[models.embed-small]\ncmd = "x"\n`;

describe("look-up", () => {
  test("by the key itself or by key_sha256; anything else, a near miss included, is none", () => {
    const t = KeyTable.of(
      config(`[keys.alice]\nkey = "sk-alice"\n[keys.bob]\nkey_sha256 = "${sha256Hex("sk-bob")}"\n`),
    );
    expect(t.required).toBe(true);
    expect(t.lookup("sk-alice")?.name).toBe("alice");
    expect(t.lookup("sk-bob")?.name).toBe("bob");
    for (const wrong of ["sk-alic", "sk-alicE", "sk-alice ", "", sha256Hex("sk-bob")]) {
      expect({ wrong, found: t.lookup(wrong) }).toEqual({ wrong, found: null });
    }
  });

  test("server.api_keys are admins named admin; with no key at all, none is required", () => {
    const t = KeyTable.of(config(`[server]\napi_keys = ["a1", "a2"]\n`));
    expect(t.lookup("a1")).toMatchObject({ name: "admin", admin: true, allModels: true });
    expect(t.lookup("a2")?.name).toBe("admin");
    expect(t.names()).toEqual(["admin"]);
    expect(KeyTable.of(config("")).required).toBe(false);
    expect(KeyTable.of(config("")).anonymous).toMatchObject({ name: "anonymous", admin: true });
  });

  test("one table per config", () => {
    const c = config("");
    expect(KeyTable.of(c)).toBe(KeyTable.of(c));
    expect(KeyTable.of(config(""))).not.toBe(KeyTable.of(c));
  });
});

describe("scope", () => {
  const t = KeyTable.of(
    config(`${MODELS}[keys.k]\nkey = "k"\nmodels = ["gpt-4o-mini", "embed-*"]\n`),
  );
  const c = (t as unknown as { config: Config }).config;
  const k = t.lookup("k")!;

  test("a pattern matches a model's id or one of its aliases", () => {
    expect(k.allows(c.models["qwen-7b"]!)).toBe(true);
    expect(k.allows(c.models["embed-small"]!)).toBe(true);
    expect(k.allows(c.models.llama!)).toBe(false);
  });

  test("a ?ctx= variant is its base's", () => {
    const variant = {
      id: "qwen-7b?ctx=8192",
      aliases: [],
      variantOf: { base: "qwen-7b", ctx: 8192 },
    };
    expect(k.allows(variant, c.models["qwen-7b"])).toBe(true);
    const other = { id: "llama?ctx=8192", aliases: [], variantOf: { base: "llama", ctx: 8192 } };
    expect(k.allows(other, c.models.llama)).toBe(false);
  });

  test("models = [] allows none; the default allows all", () => {
    const none = KeyTable.of(config(`${MODELS}[keys.n]\nkey = "n"\nmodels = []\n`)).lookup("n")!;
    expect(Object.values(c.models).some((m) => none.allows(m))).toBe(false);
    const all = KeyTable.of(config(`${MODELS}[keys.a]\nkey = "a"\n`)).lookup("a")!;
    expect(Object.values(c.models).every((m) => all.allows(m))).toBe(true);
  });
});

describe("a reload", () => {
  test("revokes a removed key and one whose secret changed; a kept one is not", () => {
    const c = config(
      `[server]\napi_keys = ["root"]\n[keys.a]\nkey = "a"\n[keys.b]\nkey = "b"\n[keys.c]\nkey = "c"\n`,
    );
    const t = KeyTable.of(c);
    const [root, a, b, kept] = ["root", "a", "b", "c"].map((k) => t.lookup(k)!);
    const next = config(`[keys.b]\nkey = "b2"\n[keys.c]\nkey = "c"\nrpm = 5\n`);
    c.server.apiKeys = next.server.apiKeys;
    c.keys = next.keys;
    expect(t.sync()).toBe(3);
    expect([root!.revoked, a!.revoked, b!.revoked, kept!.revoked]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(t.lookup("b")).toBeNull();
    expect(t.lookup("b2")?.name).toBe("b");
    expect(t.lookup("c")?.rpm).toBe(5);
    expect(t.sync()).toBe(0);
  });

  test("the same secret under another name is a new key", () => {
    const c = config(`[keys.a]\nkey = "s"\n`);
    const t = KeyTable.of(c);
    const a = t.lookup("s")!;
    c.keys = config(`[keys.z]\nkey = "s"\n`).keys;
    expect(t.sync()).toBe(1);
    expect(a.revoked).toBe(true);
    expect(t.lookup("s")?.name).toBe("z");
  });
});
