/**
 * keep_kv: `KvSlots` over a fake llama-server slots API (an in-process fetch, fake timers),
 * and `ModelProcess` calling it around a real demo upstream.
 */
import { afterEach, describe, expect, test } from "bun:test";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KeepKv, ModelConfig } from "../../src/config/types.ts";
import { MANIFEST } from "../../src/process/kv-folders.ts";
import { KvSlots } from "../../src/process/kv-slots.ts";
import { ModelProcess } from "../../src/process/model-process.ts";
import { liveGroups } from "../../src/process/process-group.ts";
import type { Fetch } from "../../src/shared/fetch.ts";
import { demoModel } from "../support/demo-model.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { captureLogger } from "./support.ts";

const dirs: string[] = [];
const made: ModelProcess[] = [];

afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.stop({ save: false })));
  expect(liveGroups()).toEqual([]);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function kvConfig(over: Partial<KeepKv> = {}): KeepKv {
  const root = mkdtempSync(join(tmpdir(), "qm-kv-"));
  dirs.push(root);
  return {
    dir: join(root, "kv", "m"),
    maxBytes: 1 << 20,
    timeoutMs: 5000,
    hash: "h1",
    modelFile: null,
    ...over,
  };
}

interface Call {
  method: string;
  path: string;
  body: unknown;
}

/**
 * llama-server's `/slots` API as far as qm uses it: slots with `n_prompt_tokens`; a save
 * writes `bytes` bytes to the folder (as `--slot-save-path` would), a restore reads it back.
 */
function fakeSlots(dir: string, slots: { id: number; n_prompt_tokens?: number }[], bytes = 100) {
  const calls: Call[] = [];
  const restored = new Map<number, number>();
  const behaviour: { fail?: (c: Call) => Response | Promise<Response> | null } = {};
  const fetch: Fetch = async (url, init) => {
    const u = new URL(url);
    const body = init?.body ? JSON.parse(String(init.body)) : null;
    const call = { method: init?.method ?? "GET", path: u.pathname + u.search, body };
    calls.push(call);
    const failed = behaviour.fail?.(call);
    if (failed) return failed;
    if (u.pathname === "/slots") return Response.json(slots);
    const m = /^\/slots\/(\d+)$/.exec(u.pathname);
    const id = Number(m?.[1]);
    const slot = slots.find((s) => s.id === id);
    if (!slot) return Response.json({ error: { message: "Invalid slot ID" } }, { status: 400 });
    const file = join(dir, body.filename);
    if (u.searchParams.get("action") === "save") {
      writeFileSync(file, Buffer.alloc(bytes, id));
      return Response.json({ id_slot: id, filename: body.filename, n_saved: slot.n_prompt_tokens });
    }
    if (u.searchParams.get("action") === "restore") {
      const n = readFileSync(file).length;
      restored.set(id, n);
      return Response.json({ id_slot: id, filename: body.filename, n_restored: n });
    }
    return Response.json({ error: { message: "Invalid action" } }, { status: 400 });
  };
  return { fetch, calls, restored, behaviour };
}

const BASE = "http://127.0.0.1:9";

describe("KvSlots", () => {
  test("saves each slot with a cached prompt; restores what the manifest names", async () => {
    const kv = kvConfig();
    const api = fakeSlots(kv.dir, [
      { id: 0, n_prompt_tokens: 2400 },
      { id: 1, n_prompt_tokens: 0 },
      { id: 2 }, // never used: no prompt fields at all
      { id: 3, n_prompt_tokens: 17 },
    ]);
    const { log } = captureLogger();
    const slots = new KvSlots("m", kv, { log, fetch: api.fetch, timers: new FakeTimers() });
    slots.prepare();
    const saved = await slots.save(BASE);
    expect(saved).toEqual({ done: [0, 3], failed: [], timedOut: false });
    expect(api.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      "GET /slots",
      "POST /slots/0?action=save",
      "POST /slots/3?action=save",
    ]);
    expect(api.calls[1]!.body).toEqual({ filename: "slot-0.bin" });
    const manifest = JSON.parse(readFileSync(join(kv.dir, MANIFEST), "utf8"));
    expect(manifest.hash).toBe("h1");
    expect(Object.keys(manifest.slots)).toEqual(["0", "3"]);
    expect(manifest.slots["0"]).toMatchObject({ file: "slot-0.bin", tokens: 2400 });

    api.calls.length = 0;
    const back = await slots.restore(BASE);
    expect(back).toEqual({ done: [0, 3], failed: [], timedOut: false });
    expect(api.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      "POST /slots/0?action=restore",
      "POST /slots/3?action=restore",
    ]);
    expect([...api.restored.keys()]).toEqual([0, 3]);
  });

  test("nothing saved: a restore asks nothing", async () => {
    const kv = kvConfig();
    const api = fakeSlots(kv.dir, [{ id: 0, n_prompt_tokens: 5 }]);
    const slots = new KvSlots("m", kv, { log: captureLogger().log, fetch: api.fetch });
    slots.prepare();
    expect(await slots.restore(BASE)).toEqual({ done: [], failed: [], timedOut: false });
    expect(api.calls).toEqual([]);
  });

  test("failures are logged, never thrown", async () => {
    const kv = kvConfig();
    const cap = captureLogger();
    // /slots off (llama-server --no-slots answers 501), a refused connection, not JSON.
    const answers: (() => Promise<Response>)[] = [
      async () => Response.json({ error: { message: "not supported" } }, { status: 501 }),
      async () => {
        throw new TypeError("Unable to connect");
      },
      async () => new Response("<html>"),
      async () => Response.json({ slots: "no" }),
      // An answer past 16 MiB is not read whole.
      async () => new Response("[".padEnd(17 * 1024 * 1024, " ")),
    ];
    for (const answer of answers) {
      const slots = new KvSlots("m", kv, { log: cap.log, fetch: answer });
      slots.prepare();
      const o = await slots.save(BASE);
      expect(o.done).toEqual([]);
      expect(o.failed.length).toBe(1);
      expect(o.timedOut).toBe(false);
    }
    expect(cap.lines.filter((l) => l.includes("not saved") && l.includes("cold")).length).toBe(5);
    expect(cap.lines.some((l) => l.includes("HTTP 501"))).toBe(true);
    expect(cap.lines.some((l) => l.includes("an answer over 16 MiB"))).toBe(true);

    // One slot's save fails: the others are saved; a restore that fails is logged.
    const api = fakeSlots(kv.dir, [
      { id: 0, n_prompt_tokens: 5 },
      { id: 1, n_prompt_tokens: 5 },
    ]);
    api.behaviour.fail = (c) =>
      c.path === "/slots/0?action=save"
        ? Response.json({ error: { message: "Unable to save slot" } }, { status: 500 })
        : null;
    const slots = new KvSlots("m", kv, { log: cap.log, fetch: api.fetch });
    const o = await slots.save(BASE);
    expect(o.done).toEqual([1]);
    expect(o.failed).toEqual([{ slot: 0, reason: expect.stringContaining("HTTP 500") }]);
    api.behaviour.fail = (c) =>
      c.path.endsWith("restore")
        ? Response.json({ error: { message: "invalid slot save file" } }, { status: 400 })
        : null;
    const r = await slots.restore(BASE);
    expect(r.done).toEqual([]);
    expect(r.failed).toEqual([{ slot: 1, reason: expect.stringContaining("HTTP 400") }]);
    expect(cap.lines.some((l) => l.includes("slot 1 not restored"))).toBe(true);
  });

  test("a save that hangs is abandoned at the deadline", async () => {
    const kv = kvConfig({ timeoutMs: 3000 });
    const timers = new FakeTimers();
    const cap = captureLogger();
    let signal: AbortSignal | undefined;
    const api = fakeSlots(kv.dir, [{ id: 0, n_prompt_tokens: 9 }]);
    const hanging: Fetch = (url, init) => {
      if (url.endsWith("action=save")) {
        signal = init?.signal ?? undefined;
        return new Promise<Response>(() => {}); // never answers, ignores its signal
      }
      return api.fetch(url, init);
    };
    const slots = new KvSlots("m", kv, { log: cap.log, fetch: hanging, timers });
    slots.prepare();
    let settled = false;
    const saving = slots.save(BASE).then((o) => {
      settled = true;
      return o;
    });
    await turnOver();
    timers.advance(2999);
    await turnOver();
    expect(settled).toBe(false);
    timers.advance(1);
    const o = await saving;
    expect(o).toEqual({ done: [], failed: [], timedOut: true });
    expect(signal?.aborted).toBe(true);
    expect(timers.pending).toBe(0);
    expect(cap.lines.some((l) => l.includes("save abandoned after 3000 ms"))).toBe(true);
  });

  test("a config change removes the files", () => {
    const kv = kvConfig();
    const cap = captureLogger();
    new KvSlots("m", kv, { log: cap.log }).prepare();
    writeFileSync(join(kv.dir, "slot-0.bin"), "x");
    const manifest = { hash: "h1", slots: { "0": { file: "slot-0.bin", tokens: 1, savedAt: 1 } } };
    writeFileSync(join(kv.dir, MANIFEST), JSON.stringify(manifest));
    // Same config: kept.
    new KvSlots("m", kv, { log: cap.log }).prepare();
    expect(existsSync(join(kv.dir, "slot-0.bin"))).toBe(true);
    // Another hash: gone, and a fresh manifest under the new hash.
    new KvSlots("m", { ...kv, hash: "h2" }, { log: cap.log }).prepare();
    expect(readdirSync(kv.dir)).toEqual([MANIFEST]);
    expect(JSON.parse(readFileSync(join(kv.dir, MANIFEST), "utf8"))).toEqual({
      hash: "h2",
      slots: {},
    });
    expect(cap.lines.some((l) => l.includes("its config changed"))).toBe(true);
    // An unreadable manifest counts as another config's.
    writeFileSync(join(kv.dir, "slot-1.bin"), "y");
    writeFileSync(join(kv.dir, MANIFEST), "{not json");
    new KvSlots("m", { ...kv, hash: "h2" }, { log: cap.log }).prepare();
    expect(readdirSync(kv.dir)).toEqual([MANIFEST]);
  });

  test("a model file that changed (size or mtime) drops the files; the same file keeps them", async () => {
    const root = mkdtempSync(join(tmpdir(), "qm-kv-model-"));
    dirs.push(root);
    const gguf = join(root, "m.gguf");
    writeFileSync(gguf, "weights");
    const kv = kvConfig({ modelFile: gguf });
    const api = fakeSlots(kv.dir, [{ id: 0, n_prompt_tokens: 9 }]);
    const cap = captureLogger();
    const slots = () => new KvSlots("m", kv, { log: cap.log, fetch: api.fetch });
    const saved = () => existsSync(join(kv.dir, "slot-0.bin"));
    slots().prepare();
    expect((await slots().save(BASE)).done).toEqual([0]);
    // The same file, untouched: a restart keeps and restores the slot.
    slots().prepare();
    expect(saved()).toBe(true);
    expect((await slots().restore(BASE)).done).toEqual([0]);
    // Same size, another mtime (a re-download): never restored into it, dropped at the start.
    utimesSync(gguf, new Date(2_000_000_000_000), new Date(2_000_000_000_000));
    expect((await slots().restore(BASE)).done).toEqual([]);
    slots().prepare();
    expect(saved()).toBe(false);
    expect(cap.lines.some((l) => l.includes("its model file changed"))).toBe(true);
    // Saved again under the new stamp, then the file grows (another quantisation): dropped.
    expect((await slots().save(BASE)).done).toEqual([0]);
    slots().prepare();
    expect(saved()).toBe(true);
    writeFileSync(gguf, "other weights");
    utimesSync(gguf, new Date(2_000_000_000_000), new Date(2_000_000_000_000));
    slots().prepare();
    expect(saved()).toBe(false);
  });

  test("the size cap removes the oldest files first", async () => {
    const kv = kvConfig({ maxBytes: 250 });
    mkdirSync(kv.dir, { recursive: true });
    const api = fakeSlots(kv.dir, [
      { id: 0, n_prompt_tokens: 5 },
      { id: 1, n_prompt_tokens: 5 },
    ]);
    const slots = new KvSlots("m", kv, { log: captureLogger().log, fetch: api.fetch });
    slots.prepare();
    // An older file of 100 bytes already there (a slot saved before, now idle).
    writeFileSync(join(kv.dir, "slot-7.bin"), Buffer.alloc(100));
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(kv.dir, "slot-7.bin"), old, old);
    await slots.save(BASE); // + 2 × 100 bytes = 300 > 250
    expect(readdirSync(kv.dir).sort()).toEqual([MANIFEST, "slot-0.bin", "slot-1.bin"]);
  });
});

/** A few turns of the event loop (no timed wait): what was going to settle has. */
async function turnOver(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** `slots` answers the model's `/slots` calls; its health checks go to the real server. */
function slotsOnly(slots: Fetch): Fetch {
  return (url, init) =>
    new URL(url).pathname.startsWith("/slots") ? slots(url, init) : fetch(url, init);
}

/** A demo model with keep_kv set (ModelProcess does not care what the program is). */
function keepKvModel(id: string, kv: KeepKv): ModelConfig {
  return { ...demoModel(id), keepKv: kv };
}

describe("ModelProcess with keep_kv", () => {
  test("start resolves only after the restore; a stop of a ready model saves first", async () => {
    const kv = kvConfig();
    const api = fakeSlots(kv.dir, [{ id: 0, n_prompt_tokens: 42 }]);
    let releaseRestore!: () => void;
    const gate = new Promise<void>((r) => {
      releaseRestore = r;
    });
    let restoreAsked!: () => void;
    const restoreArrived = new Promise<void>((r) => {
      restoreAsked = r;
    });
    const fetch: Fetch = async (url, init) => {
      if (url.endsWith("action=restore")) {
        restoreAsked();
        await gate;
      }
      return api.fetch(url, init);
    };
    const states: string[] = [];
    const proc = new ModelProcess(keepKvModel("kv-a", kv), {
      healthCheckTimeoutS: 10,
      log: captureLogger().log,
      fetch: slotsOnly(fetch),
      onStateChange: (s) => states.push(s),
    });
    made.push(proc);
    await proc.start();
    // Nothing saved yet: the first start restores nothing.
    expect(api.calls).toEqual([]);
    await proc.stop();
    expect(api.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      "GET /slots",
      "POST /slots/0?action=save",
    ]);
    expect(existsSync(join(kv.dir, "slot-0.bin"))).toBe(true);

    let started = false;
    const starting = proc.start().then(() => {
      started = true;
    });
    // The restore call arrives once the real process is healthy, and is held there.
    await restoreArrived;
    await turnOver();
    expect(started).toBe(false);
    expect(proc.state).toBe("starting");
    releaseRestore();
    await starting;
    expect(proc.state).toBe("ready");
    expect(api.restored.get(0)).toBe(100);
    expect(states).toEqual(["starting", "ready", "stopping", "stopped", "starting", "ready"]);
  });

  test("a start whose restore fails is still ready; a stop whose save fails still stops", async () => {
    const kv = kvConfig();
    mkdirSync(kv.dir, { recursive: true });
    writeFileSync(join(kv.dir, "slot-0.bin"), "bad");
    writeFileSync(
      join(kv.dir, MANIFEST),
      JSON.stringify({ hash: "h1", slots: { "0": { file: "slot-0.bin", tokens: 3, savedAt: 1 } } }),
    );
    const cap = captureLogger();
    const refuse: Fetch = async () => {
      throw new TypeError("Unable to connect");
    };
    const proc = new ModelProcess(keepKvModel("kv-b", kv), {
      healthCheckTimeoutS: 10,
      log: cap.log,
      fetch: slotsOnly(refuse),
    });
    made.push(proc);
    await proc.start();
    expect(proc.state).toBe("ready");
    expect(cap.lines.some((l) => l.includes("slot 0 not restored"))).toBe(true);
    await proc.stop();
    expect(proc.state).toBe("stopped");
    expect(cap.lines.some((l) => l.includes("KV not saved"))).toBe(true);
  });

  test("a stop waits for a hung save only until keep_kv_timeout_s, then stops", async () => {
    const kv = kvConfig({ timeoutMs: 20_000 });
    const timers = new FakeTimers();
    let saveAsked!: () => void;
    const saveArrived = new Promise<void>((r) => {
      saveAsked = r;
    });
    const hang: Fetch = () => {
      saveAsked();
      return new Promise<Response>(() => {});
    };
    const cap = captureLogger();
    // Ready once spawned (no health check): every wait of this process is on the fake clock.
    const model = { ...keepKvModel("kv-d", kv), checkEndpoint: null };
    const proc = new ModelProcess(model, {
      healthCheckTimeoutS: 10,
      log: cap.log,
      fetch: hang,
      timers,
    });
    made.push(proc);
    await proc.start();
    let stopped = false;
    const stopping = proc.stop().then(() => {
      stopped = true;
    });
    await saveArrived;
    timers.advance(19_999);
    await turnOver();
    expect(stopped).toBe(false);
    expect(proc.pid).not.toBeNull(); // still running: the save is being waited for
    timers.advance(1);
    await stopping;
    expect(proc.state).toBe("stopped");
    expect(cap.lines.some((l) => l.includes("save abandoned after 20000 ms"))).toBe(true);
  });

  test("stop({save:false}) (shutdown) asks nothing", async () => {
    const kv = kvConfig();
    const api = fakeSlots(kv.dir, [{ id: 0, n_prompt_tokens: 42 }]);
    const proc = new ModelProcess(keepKvModel("kv-c", kv), {
      healthCheckTimeoutS: 10,
      log: captureLogger().log,
      fetch: slotsOnly(api.fetch),
    });
    made.push(proc);
    await proc.start();
    await proc.stop({ save: false });
    expect(api.calls).toEqual([]);
  });
});
