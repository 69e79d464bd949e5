// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${PORT} is qm's macro, literal text here
/**
 * A reload that removes a `keep_kv` model, or turns its `keep_kv` off, deletes its saved KV
 * folder once its process is down (a running one may still save there); other folders stay.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { settle } from "./fake-server.ts";
import { setupWith } from "./reload-support.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A state dir with a saved KV folder (manifest and a slot file) for each of `ids`. */
function stateDir(...ids: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "qm-kv-reload-"));
  dirs.push(dir);
  for (const id of ids) {
    mkdirSync(join(dir, "kv", id), { recursive: true });
    writeFileSync(join(dir, "kv", id, "manifest.json"), '{"hash":"x","slots":{}}');
    writeFileSync(join(dir, "kv", id, "slot-0.bin"), "kv");
  }
  return dir;
}

/** Each model's server on its own port: two on one port that run together is a config error. */
const llama = (id: string, ...keys: string[]) =>
  [
    `[models.${id}]`,
    `cmd = "llama-server -m ${id}.gguf --port ${9000 + id.charCodeAt(0)}"`,
    `proxy = "http://127.0.0.1:${9000 + id.charCodeAt(0)}"`,
    ...keys,
    "",
  ].join("\n");

const saved = (state: string, id: string) => existsSync(join(state, "kv", id));

describe("keep_kv folders across a reload", () => {
  test("a removed model that is down loses its folder at once; the others keep theirs", () => {
    const state = stateDir("a", "b", "stranger");
    const t = setupWith(
      `[server]\nstate_dir = "${state}"\n`,
      llama("a", "keep_kv = true"),
      llama("b", "keep_kv = true"),
    );
    expect(t.reload(llama("b", "keep_kv = true")).ok).toBe(true);
    expect(saved(state, "a")).toBe(false);
    expect(saved(state, "b")).toBe(true);
    // A folder of a model this qm never had is another's (a second qm on the same state dir).
    expect(saved(state, "stranger")).toBe(true);
    expect(t.log()).toContain(`keep_kv: removed ${join(state, "kv", "a")}`);
  });

  test("keep_kv turned off on a stopped model: its folder goes", () => {
    const state = stateDir("a");
    const t = setupWith(`[server]\nstate_dir = "${state}"\n`, llama("a", "keep_kv = true"));
    t.reload(llama("a"));
    expect(saved(state, "a")).toBe(false);
  });

  test("a running model keeps its folder until it stops (its stop may save there)", async () => {
    const state = stateDir("a", "b");
    const t = setupWith(
      `[server]\nstate_dir = "${state}"\n`,
      llama("a", "keep_kv = true"),
      llama("b", "keep_kv = true"),
      '[groups.g]\nmembers = ["a", "b"]\nswap = false\n',
    );
    const a = await t.up("a");
    const b = await t.up("b");
    // a: removed; b: keep_kv off (a restart, pending while it runs).
    t.reload(llama("b"), '[groups.g]\nmembers = ["b"]\nswap = false\n');
    await settle();
    expect(saved(state, "a")).toBe(true);
    expect(saved(state, "b")).toBe(true);
    a.release();
    await settle();
    t.fakes.of("a").stopped();
    await settle();
    expect(saved(state, "a")).toBe(false);
    expect(saved(state, "b")).toBe(true);
    b.release();
    t.rt.unload("b");
    await settle();
    t.fakes.of("b").stopped();
    await settle();
    expect(saved(state, "b")).toBe(false);
  });

  test("a model that keeps keep_kv keeps its folder, whatever else changed", async () => {
    const state = stateDir("a");
    const t = setupWith(`[server]\nstate_dir = "${state}"\n`, llama("a", "keep_kv = true"));
    const lease = await t.up("a");
    t.reload(llama("a", "keep_kv = true", "ttl_s = 60"));
    lease.release();
    t.rt.unload("a");
    await settle();
    t.fakes.of("a").stopped();
    await settle();
    expect(saved(state, "a")).toBe(true);
  });

  test("an unchanged reload of a running model on ${PORT} restarts nothing and keeps its cache", async () => {
    const state = stateDir("a");
    const onPort = [
      "[models.a]",
      'cmd = "llama-server -m a.gguf --port ${PORT}"',
      "keep_kv = true",
      "",
    ].join("\n");
    const t = setupWith(`[server]\nstate_dir = "${state}"\n`, onPort);
    const lease = await t.up("a");
    const port = t.rt.config.models.a!.port;
    // The running model holds its port, so the reloaded config hands ${PORT} out afresh.
    const outcome = t.reload(onPort);
    expect(outcome.ok && outcome.changes).toMatchObject({ restart_pending: {} });
    expect(t.rt.reloads.restartPending("a")).toBe(false);
    expect(t.rt.config.models.a!.port).toBe(port);
    lease.release();
    expect(saved(state, "a")).toBe(true);
  });

  test("only qm's own folders go: one without a manifest is left as it is", () => {
    const state = stateDir();
    mkdirSync(join(state, "kv", "a"), { recursive: true });
    writeFileSync(join(state, "kv", "a", "notes.txt"), "mine");
    const t = setupWith(`[server]\nstate_dir = "${state}"\n`, llama("a", "keep_kv = true"));
    t.reload(llama("a"));
    expect(existsSync(join(state, "kv", "a", "notes.txt"))).toBe(true);
  });
});
