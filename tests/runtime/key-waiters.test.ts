/**
 * The waiters and keys: the key reaches the scheduler's request event; past `max_concurrency` a
 * key's requests wait their turn (not refused); past `max_queued` they get 503; a reload that
 * revokes a key refuses what it still waits for with 401 and lets what it is served finish.
 */
import { describe, expect, test } from "bun:test";
import type { Lease, RequestKey } from "../../src/api/gateway.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { KeyTable } from "../../src/keys/table.ts";
import { Waiters } from "../../src/runtime/waiters.ts";
import type { RequestSpec } from "../../src/scheduler/types.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { track } from "../support/track.ts";
import { settle } from "./fake-server.ts";
import { HEAD, model as modelToml, runtimeHarness } from "./harness.ts";

const model = (id: string) => ({ id, port: 9 }) as ModelConfig;

/** Waiters over a stand-in scheduler that grants nothing by itself. */
function setup() {
  const clock = new FakeClock(1000);
  const log: string[] = [];
  const requests: RequestSpec[] = [];
  const waiters = new Waiters({
    clock,
    current: (m) => m,
    events: {
      request: (spec) => {
        requests.push(spec);
        log.push(`request ${spec.id}`);
      },
      cancel: (id) => log.push(`cancel ${id}`),
      serveDone: (id) => log.push(`serveDone ${id}`),
    },
  });
  const ask = (key: RequestKey | undefined, signal = new AbortController().signal) =>
    track(waiters.acquire(model("m"), signal, key ? { key } : {}));
  return { clock, log, requests, waiters, ask };
}

const key = (over: Partial<RequestKey> = {}): RequestKey => ({
  name: "ci",
  priority: "batch",
  maxConcurrency: 0,
  ...over,
});

describe("the key reaches the scheduler", () => {
  test("as name, priority and max_concurrency; none for a request without one", () => {
    const t = setup();
    t.ask(key({ maxConcurrency: 3, maxQueued: 9 }));
    t.ask(undefined);
    expect(t.requests[0]!.key).toEqual({ name: "ci", priority: "batch", maxConcurrency: 3 });
    expect(t.requests[1]!.key).toBeUndefined();
  });
});

describe("max_concurrency", () => {
  test("requests past it wait in order, and go to the scheduler as earlier ones end", async () => {
    const t = setup();
    const k = key({ maxConcurrency: 2 });
    const [a, b, c, d] = [t.ask(k), t.ask(k), t.ask(k), t.ask(k)];
    const other = t.ask(key({ name: "alice", maxConcurrency: 2 }));
    // Two of ci's reach the scheduler; alice is not held back by ci's cap.
    expect(t.log).toEqual(["request 1", "request 2", "request 5"]);
    expect(t.waiters.waitingOf("ci")).toBe(4);
    expect(t.waiters.waiting().map((w) => [w.key, w.position])).toEqual([
      ["ci", null],
      ["ci", null],
      ["ci", null],
      ["ci", null],
      ["alice", null],
    ]);
    t.waiters.grant(1);
    await settle();
    expect(t.waiters.inflightOf("ci")).toBe(1);
    // A grant is not an end: the third still waits.
    expect(t.log).toEqual(["request 1", "request 2", "request 5"]);
    (a.value as Lease).release();
    expect(t.log.slice(3)).toEqual(["serveDone 1", "request 3"]);
    // One the scheduler refuses ends too: the fourth goes on.
    t.waiters.fail(2, new Error("x") as never);
    expect(t.log.slice(5)).toEqual(["request 4"]);
    await settle();
    expect([b.error !== undefined, c.done, d.done, other.done]).toEqual([
      true,
      false,
      false,
      false,
    ]);
  });

  test("one that leaves while held back never reaches the scheduler", async () => {
    const t = setup();
    const k = key({ maxConcurrency: 1 });
    const first = t.ask(k);
    const ctl = new AbortController();
    const gone = t.ask(k, ctl.signal);
    const third = t.ask(k);
    ctl.abort();
    await settle();
    expect(gone.error?.code).toBe("cancelled");
    t.waiters.grant(1);
    await settle();
    (first.value as Lease).release();
    expect(t.log).toEqual(["request 1", "serveDone 1", "request 3"]);
    expect(third.done).toBe(false);
  });
});

describe("max_queued", () => {
  test("past it a request is refused with 503 queue_full and Retry-After; other keys are not", async () => {
    const t = setup();
    const k = key({ maxQueued: 2 });
    t.ask(k);
    t.ask(k);
    const third = t.ask(k);
    const other = t.ask(key({ name: "alice", maxQueued: 2 }));
    await settle();
    expect(third.error?.code).toBe("queue_full");
    expect(third.error?.status).toBe(503);
    expect(third.error?.retryAfterS).toBe(5);
    expect(third.error?.message).toContain('key "ci" already has 2 requests waiting (max_queued)');
    expect(other.done).toBe(false);
    // Once one is granted, one more may wait.
    t.waiters.grant(1);
    await settle();
    expect(t.ask(k).done).toBe(false);
  });
});

describe("revoked", () => {
  test("a reload that removes a key: its waiting request gets 401, its served one finishes", async () => {
    const keys = `[keys.alice]\nkey = "sk-alice"\n[keys.bob]\nkey = "sk-bob"\n`;
    const models = `${HEAD}${modelToml("m", "concurrency_limit = 1")}`;
    const t = runtimeHarness(`${keys}${models}`);
    const table = KeyTable.of(t.rt.config);
    const alice = table.lookup("sk-alice")!;
    const bob = table.lookup("sk-bob")!;
    const served = t.acquire("m", { key: alice });
    await settle();
    t.fakes.of("m").ready();
    await settle();
    expect(served.value).toBeDefined();
    const waitingAlice = t.acquire("m", { key: alice });
    const waitingBob = t.acquire("m", { key: bob });
    await settle();
    expect(t.rt.status().waiting?.map((w) => w.key)).toEqual(["alice", "bob"]);
    expect(t.reloadText(`[keys.bob]\nkey = "sk-bob"\n${models}`).ok).toBe(true);
    await settle();
    expect(waitingAlice.error?.code).toBe("unauthorized");
    expect(waitingAlice.error?.status).toBe(401);
    expect(waitingBob.done).toBe(false);
    expect(alice.revoked).toBe(true);
    // The one being served finishes, and the next in line (bob's) is then served.
    (served.value as Lease).release();
    await settle();
    expect(waitingBob.value).toBeDefined();
    expect(table.lookup("sk-alice")).toBeNull();
    // A revoked key's request that arrives after the reload is refused at once.
    const late = t.acquire("m", { key: alice });
    await settle();
    expect(late.error?.code).toBe("unauthorized");
  });
});
