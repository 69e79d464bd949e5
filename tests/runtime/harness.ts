/**
 * The runtime in-process for tests: the real scheduler, waiters, swap runner, lease book and
 * wake timer, over fake model processes and fake timers. No process, no socket, no sleep.
 */
import type { AcquireHooks, Lease, LeaseInfo, QmEvent } from "../../src/api/gateway.ts";
import type { RuntimeOptions } from "../../src/runtime/assemble.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { createLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";
import { fakeServers, settle } from "./fake-server.ts";

/** `[models.ID]` tables with extra keys each, e.g. `model("a", "concurrency_limit = 1")`. */
export const model = (id: string, ...keys: string[]) =>
  [`[models.${id}]`, `cmd = "run ${id}"`, `proxy = "http://127.0.0.1:9"`, ...keys, ""].join("\n");

/** Prefetch that finds no file and no memory: it never reads. */
const NO_PREFETCH: RuntimeOptions["prefetch"] = {
  source: { size: () => null, open: () => Promise.reject(new Error("no files in tests")) },
  memory: () => null,
};

/** No GPU probe: budgets are what the config says. */
export const HEAD = `[resources]\ngpu_probe = "off"\n\n`;

/**
 * A runtime over the config `text`; a reload reads the text `reloadText` last gave. `prefetch`:
 * its files and memory figures (default: no file is ever read).
 */
export function runtimeHarness(text: string, prefetch: RuntimeOptions["prefetch"] = NO_PREFETCH) {
  const cfg = config(text);
  const timers = new FakeTimers();
  const lines: string[] = [];
  const fakes = fakeServers();
  const events: QmEvent[] = [];
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: createLogger("info", (l) => lines.push(l)),
    makeProcess: fakes.make,
    loadConfig: (isPortFree) => config(text, { isPortFree }),
    prefetch,
  });
  rt.subscribe((e) => events.push(e));
  const modelOf = (id: string) => {
    const m = cfg.models[id] ?? rt.resolve(id);
    if (!m) throw new Error(`${id} does not resolve`);
    return m;
  };
  const t = {
    cfg,
    rt,
    timers,
    fakes,
    events,
    log: () => lines.join("\n"),
    /** Rewrites the config "on disk" and reloads it. */
    reloadText(raw: string) {
      text = raw;
      return rt.reloadConfig();
    },
    /** Acquires `id`; the result is read after `settle()`. */
    acquire(id: string, hooks?: AcquireHooks, signal = new AbortController().signal) {
      return track(rt.acquire(modelOf(id), signal, hooks));
    },
    /** Acquires `id` and brings it up: a granted lease. */
    async up(id: string): Promise<Lease> {
      const p = t.acquire(id);
      const fake = fakes.of(modelOf(id).id);
      await settle();
      if (fake.state === "starting") fake.ready();
      await settle();
      if (!p.value) throw new Error(`${id} was not granted: ${p.error?.message}`);
      return p.value;
    },
    /** Takes a lease (the HTTP lease route's call) on `id`, starting it when needed. */
    async lease(id: string, ttlMs: number): Promise<LeaseInfo> {
      const p = track(rt.lease(modelOf(id), new AbortController().signal, ttlMs));
      await settle();
      if (fakes.of(id).state === "starting") fakes.of(id).ready();
      await settle();
      if (!p.value) throw new Error(`no lease on ${id}: ${p.error?.message}`);
      return p.value;
    },
    /** The model's status row (undefined once it left the table). */
    status: (id: string) => rt.status().models.find((m) => m.id === id)!,
  };
  return t;
}
