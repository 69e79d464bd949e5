/**
 * A runtime with one managed mistral.rs node `n` answering over an injected fetch (a
 * `FakeMistralrs`), on fake timers: the real scheduler, waiters and swap runner. Nothing here
 * waits on real time: promises are let settle, and the fake clock moves only when a test says.
 */
import type { Lease } from "../../src/api/gateway.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { createLogger } from "../../src/shared/log.ts";
import { fakeServers } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import type { FakeMistralrs } from "../support/fake-mistralrs.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";

/** Lets every promise chain in flight run (no clock time passes). */
export async function flush(rounds = 30): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/** `[peers.n]` with `nodeKeys`, polled every 5 s unless they say; `extra` goes before it. */
export function nodeRuntime(
  nodeKeys: string,
  fake: FakeMistralrs,
  extra = "",
  restart?: (argv: string[]) => Promise<number>,
) {
  const poll = /^poll_s\b/m.test(nodeKeys) ? "" : "poll_s = 5\n";
  const cfg = config(
    `[resources]\ngpu_probe = "off"\n[server]\nhealth_check_timeout_s = 60\n\n${extra}\n[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\napi_key = "node-key"\n${poll}${nodeKeys}\n`,
  );
  const timers = new FakeTimers();
  const lines: string[] = [];
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: createLogger("info", (l) => lines.push(l)),
    makeProcess: fakeServers().make,
    nodeFetch: fake.fetch,
    ...(restart ? { runRestart: restart } : {}),
  });
  const t = {
    rt,
    timers,
    log: () => lines.join("\n"),
    acquire(name: string) {
      const m = rt.resolve(name) ?? rt.peers?.resolve(name);
      if (!m) throw new Error(`${name} does not resolve`);
      return track(rt.acquire(m, new AbortController().signal));
    },
    async up(name: string): Promise<Lease> {
      const p = t.acquire(name);
      await flush();
      if (!p.value) throw new Error(`${name} was not granted: ${p.error?.message}`);
      return p.value;
    },
    /** A request that must fail; its error. */
    async refused(name: string) {
      const p = t.acquire(name);
      await flush();
      if (!p.error) throw new Error(`${name} was not refused (${p.done ? "granted" : "waiting"})`);
      return p.error;
    },
    state: (id: string) => rt.status().models.find((m) => m.id === id)?.state,
    /** Each node model's state, by the node's name for it. */
    states(): Record<string, string> {
      const out: Record<string, string> = {};
      for (const m of rt.status().models) if (m.node) out[m.id.slice(2)] = m.state;
      return out;
    },
    /** A quarter second passes: a defrag due once the node drained runs. */
    async drained(): Promise<void> {
      timers.advance(250);
      await flush();
    },
    /** One poll of the node (`poll_s` passes). */
    async poll(): Promise<void> {
      timers.advance(5000);
      await flush();
    },
  };
  return t;
}
