/** The routing decision (`route`) and the breaker, pure: no I/O, the clock passed in. */
import { describe, expect, test } from "bun:test";
import { Breaker, MAX_BACKOFF_MS } from "../../src/peers/breaker.ts";
import { type Offer, type PeerView, route } from "../../src/peers/route.ts";

function peer(id: string, models: Record<string, Offer>, extra: Partial<PeerView> = {}): PeerView {
  return {
    id,
    order: 0,
    weight: 1,
    available: true,
    inflight: 0,
    resident: 0,
    models: new Map(Object.entries(models)),
    ...extra,
  };
}

describe("route", () => {
  test("a qm peer's alias routes as its model does, sent as the client wrote it", () => {
    const aliases = new Map([["fast", "m"]]);
    const peers = [
      peer("a", { m: "offered" }, { order: 0, aliases }),
      peer("b", { m: "ready" }, { order: 1, aliases }),
    ];
    // The alias takes its model's state: b has it ready.
    expect(route("fast", peers)).toEqual({ kind: "peer", peer: "b", remote: "fast" });
    expect(route("a/fast", peers)).toEqual({ kind: "peer", peer: "a", remote: "fast" });
    // An alias of a model the peer does not list, or a name no alias is, is not offered.
    const stale = [peer("c", { m: "ready" }, { aliases: new Map([["gone", "x"]]) })];
    expect(route("gone", stale)).toBeUndefined();
    expect(route("c/gone", stale)).toEqual({ kind: "not_offered", peer: "c", remote: "gone" });
    expect(route("slow", peers)).toBeUndefined();
    // Only down peers have it: the 502 names the first.
    const down = peers.map((p) => ({ ...p, available: false }));
    expect(route("fast", down)).toEqual({ kind: "down", peer: "a", remote: "fast" });
  });

  test("PEER/MODEL: that peer, or why not (it lacks the model, or it is down)", () => {
    const peers = [peer("a", { m: "offered" }), peer("b", { m: "ready" }, { available: false })];
    expect(route("a/m", peers)).toEqual({ kind: "peer", peer: "a", remote: "m" });
    expect(route("a/x", peers)).toEqual({ kind: "not_offered", peer: "a", remote: "x" });
    expect(route("b/m", peers)).toEqual({ kind: "down", peer: "b", remote: "m" });
    // A slash that names no peer is a plain model name (`org/model`).
    expect(route("org/m", [peer("a", { "org/m": "ready" })])).toMatchObject({ peer: "a" });
  });

  test("ready beats offered, whatever the load", () => {
    const peers = [
      peer("idle", { m: "offered" }, { order: 0 }),
      peer("busy", { m: "ready" }, { order: 1, inflight: 9 }),
    ];
    expect(route("m", peers)).toMatchObject({ peer: "busy" });
  });

  test("among ready peers: least in flight, then the highest weight, then config order", () => {
    const a = peer("a", { m: "ready" }, { order: 0, inflight: 2 });
    const b = peer("b", { m: "ready" }, { order: 1, inflight: 1 });
    const c = peer("c", { m: "ready" }, { order: 2, inflight: 1, weight: 5 });
    expect(route("m", [a, b, c])).toMatchObject({ peer: "c" });
    expect(route("m", [a, b])).toMatchObject({ peer: "b" });
    const d = peer("d", { m: "ready" }, { order: 3, inflight: 1 });
    expect(route("m", [b, d])).toMatchObject({ peer: "b" });
  });

  test("offered only: the peer with the fewest resident models (least to evict)", () => {
    const full = peer("full", { m: "offered" }, { order: 0, resident: 3 });
    const empty = peer("empty", { m: "offered" }, { order: 1, resident: 0, inflight: 4 });
    expect(route("m", [full, empty])).toMatchObject({ peer: "empty" });
  });

  test("down peers and tried peers are passed over; nobody left is undefined", () => {
    const a = peer("a", { m: "ready" }, { available: false });
    const b = peer("b", { m: "offered" });
    expect(route("m", [a, b])).toMatchObject({ peer: "b" });
    expect(route("m", [a, b], new Set(["b"]))).toBeUndefined();
    expect(route("other", [a, b])).toBeUndefined();
  });

  test("a bare name only down peers offer names the first of them; a failover's next is undefined", () => {
    const a = peer("a", { m: "ready" }, { available: false, order: 1 });
    const b = peer("b", { m: "offered" }, { available: false, order: 0 });
    expect(route("m", [a, b])).toEqual({ kind: "down", peer: "b", remote: "m" });
    expect(route("m", [a, b], new Set(["c"]))).toBeUndefined();
  });
});

describe("breaker", () => {
  test("closed → open with doubling backoff to 60 s → half-open lets exactly one through", () => {
    const b = new Breaker();
    expect(b.health(0)).toBe("up");
    const backoffs: number[] = [];
    let now = 0;
    for (let i = 0; i < 9; i++) {
      b.failed(now, "refused");
      backoffs.push(b.downUntil - now);
      expect(b.allow(now)).toBe("no");
      expect(b.health(now)).toBe("down");
      now = b.downUntil;
      expect(b.health(now)).toBe("probing");
      expect(b.allow(now)).toBe("trial");
      expect(b.allow(now)).toBe("no");
    }
    expect(backoffs).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    expect(MAX_BACKOFF_MS).toBe(60_000);
    // A trial that says nothing (its client left) is given back: the next asker tries.
    b.abandon();
    expect(b.allow(now)).toBe("trial");
    b.succeeded();
    expect(b.health(now)).toBe("up");
    expect(b.allow(now)).toBe("pass");
    b.failed(now, "again");
    expect(b.downUntil - now).toBe(1000);
    expect(b.lastError).toBe("again");
  });
});
