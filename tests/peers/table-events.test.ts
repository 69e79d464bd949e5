/**
 * `event: peer` for a change of a peer's models: the table tells its listener when a qm peer's
 * status or one of its `event: model`s changes what it offers, and only then.
 */
import { expect, test } from "bun:test";
import type { Offer } from "../../src/peers/route.ts";
import { type PeerStatusJson, PeerTable } from "../../src/peers/table.ts";
import { config } from "../support/config.ts";

function table() {
  const cfg = config(`[peers.b]\nurl = "http://b.test"\nkind = "qm"\n`);
  const changes: PeerStatusJson[] = [];
  const t = new PeerTable(
    cfg.peers,
    () => 0,
    (s) => changes.push(s),
  );
  const models = (c: PeerStatusJson | undefined) => c?.models.map((m) => `${m.id}:${m.state}`);
  return { t, changes, models };
}

const offers = (o: Record<string, Offer>) => new Map(Object.entries(o));

test("a status that changes the peer's models is told; the same status again is not", () => {
  const { t, changes, models } = table();
  t.discovered("b", offers({ m: "offered", n: "ready" }), 1);
  expect(changes).toHaveLength(1);
  expect(changes[0]).toMatchObject({ name: "b", state: "up" });
  expect(models(changes[0])).toEqual(["m:offered", "n:ready"]);
  // The same models in another order, or only another resident count: nothing to tell.
  t.discovered("b", offers({ n: "ready", m: "offered" }), 2);
  expect(changes).toHaveLength(1);
  t.discovered("b", offers({ m: "ready", n: "ready" }), 2);
  expect(models(changes[1])).toEqual(["m:ready", "n:ready"]);
  // A model gone from the peer is a change too.
  t.discovered("b", offers({ m: "ready" }), 1);
  expect(models(changes[2])).toEqual(["m:ready"]);
  expect(changes).toHaveLength(3);
});

test("an event: model that changes a model's state is told; one that repeats it is not", () => {
  const { t, changes, models } = table();
  t.discovered("b", offers({ m: "offered" }), 0);
  changes.length = 0;
  t.modelChanged("b", "m", "ready");
  expect(changes).toHaveLength(1);
  expect(models(changes[0])).toEqual(["m:ready"]);
  t.modelChanged("b", "m", "ready");
  expect(changes).toHaveLength(1);
  t.modelChanged("b", "m", "offered");
  expect(models(changes[1])).toEqual(["m:offered"]);
  // A model the peer did not list before is new: told.
  t.modelChanged("b", "x", "offered");
  expect(models(changes[2])).toEqual(["m:offered", "x:offered"]);
  // A peer not in the table: nothing.
  t.modelChanged("nobody", "m", "ready");
  t.discovered("nobody", offers({ m: "ready" }), 1);
  expect(changes).toHaveLength(3);
});
