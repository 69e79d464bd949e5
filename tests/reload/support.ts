/**
 * A runtime for reload tests: the real scheduler, waiters and swap runner over fake model
 * processes and fake timers; each reload loads its text through the real loader.
 */
import type { Lease, QmEvent } from "../../src/api/gateway.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { createLogger } from "../../src/shared/log.ts";
import { fakeServers, settle } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";

export const model = (id: string, ...keys: string[]) =>
  [`[models.${id}]`, `cmd = "run ${id}"`, `proxy = "http://127.0.0.1:9"`, ...keys, ""].join("\n");

export const HEAD = `[resources]\ngpu_probe = "off"\n\n`;

export function setup(...models: string[]) {
  return setupWith("", ...models);
}

/** `head`: tables before the models (e.g. `[server]`), kept across reloads. */
export function setupWith(head: string, ...models: string[]) {
  const top = head + HEAD;
  let text = top + models.join("\n");
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
  });
  rt.subscribe((e) => events.push(e));
  const t = {
    rt,
    fakes,
    timers,
    events,
    log: () => lines.join("\n"),
    /** Rewrites the config "on disk" and reloads it. */
    reload(...next: string[]) {
      text = top + next.join("\n");
      return rt.reloadConfig();
    },
    reloadText(raw: string) {
      text = raw;
      return rt.reloadConfig();
    },
    acquire(id: string) {
      const m = rt.resolve(id);
      if (!m) throw new Error(`${id} does not resolve`);
      return track(rt.acquire(m, new AbortController().signal));
    },
    async up(id: string): Promise<Lease> {
      const p = t.acquire(id);
      const fake = fakes.of(rt.resolve(id)!.id);
      await settle();
      if (fake.state === "starting") fake.ready();
      await settle();
      if (!p.value) throw new Error(`${id} was not granted: ${p.error?.message}`);
      return p.value;
    },
    status: (id: string) => rt.status().models.find((m) => m.id === id),
  };
  return t;
}
