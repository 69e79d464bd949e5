import { describe, expect, test } from "bun:test";
import { ModelRegistry } from "../../src/runtime/registry.ts";
import { config } from "../support/config.ts";

const cfg = () =>
  config(
    `[models.a]\ncmd = "run a"\nproxy = "http://127.0.0.1:\${PORT}"\n\n[models.b]\ncmd = "run b"\nproxy = "http://127.0.0.1:\${PORT}"\n`,
  );

describe("the model registry", () => {
  test("a model nobody moved is its configured object itself", () => {
    const { models } = cfg();
    const r = new ModelRegistry();
    expect(r.live(models.a!)).toBe(models.a!);
    expect(r.placement("a")).toBeNull();
    expect(r.ports()).toEqual([]);
  });

  test("a moved model: its new port and URL over its configured settings, one copy per config object", () => {
    const { models } = cfg();
    const a = models.a!;
    const r = new ModelRegistry();
    r.move({ ...a, port: 4321, proxy: "http://127.0.0.1:4321", ttlS: 999 });
    const live = r.live(a);
    expect(live).not.toBe(a);
    expect(live).toEqual({ ...a, port: 4321, proxy: "http://127.0.0.1:4321" });
    expect(r.live(a)).toBe(live);
    // A reload's new config object gets its own copy, with its own settings.
    const reloaded = { ...a, ttlS: 77 };
    expect(r.live(reloaded)).toMatchObject({ port: 4321, ttlS: 77 });
    expect(r.live(models.b!)).toBe(models.b!);
    expect(r.placement("a")).toEqual({ port: 4321, proxy: "http://127.0.0.1:4321" });
    expect(r.ports()).toEqual([4321]);
  });

  test("forget: the model runs where its config says again", () => {
    const { models } = cfg();
    const r = new ModelRegistry();
    r.move({ ...models.a!, port: 4321, proxy: "http://127.0.0.1:4321" });
    r.forget("a");
    expect(r.live(models.a!)).toBe(models.a!);
    expect(r.ports()).toEqual([]);
  });
});
