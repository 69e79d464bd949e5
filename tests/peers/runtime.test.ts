/** The runtime's peer wiring: the table behind `Gateway.peers`, `peers` in status, `event: peer`. */
import { expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { fakeServers } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";

test("status lists the peers; a change of a peer's state is an event: peer", () => {
  const cfg = config(
    `[peers.box2]\nurl = "http://box2.test"\nmodels = ["big"]\n\n[peers.node]\nurl = "http://n.test"\nkind = "mistralrs"\n`,
  );
  const timers = new FakeTimers();
  const rt = new Runtime(cfg, {
    clock: timers,
    timers,
    log: silentLogger,
    makeProcess: fakeServers().make,
  });
  const events: QmEvent[] = [];
  rt.subscribe((e) => {
    if (e.type === "peer") events.push(e);
  });
  // A mistral.rs node is a peer too (a managed one: its models are scheduled here).
  expect(rt.status().peers?.map((p) => [p.name, p.kind, p.state])).toEqual([
    ["box2", "openai", "up"],
    ["node", "mistralrs", "up"],
  ]);
  expect(rt.peers?.resolve("big")?.peer).toEqual({ peer: "box2", apiKey: "", remote: "big" });
  rt.peers?.report("box2", { ok: false, error: 'peer "box2": connection refused' });
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ type: "peer", name: "box2", state: "down" });
  expect(rt.status().peers?.[0]?.last_error).toBe('peer "box2": connection refused');
  rt.beginShutdown();
  expect(timers.pending).toBe(0);
});

test("no peers: no table, and status has no peers field", () => {
  const timers = new FakeTimers();
  const rt = new Runtime(config(""), {
    clock: timers,
    timers,
    log: silentLogger,
    makeProcess: fakeServers().make,
  });
  expect(rt.peers).toBeNull();
  expect(rt.status().peers).toBeUndefined();
});
