import { describe, expect, test } from "bun:test";
import type { Lease } from "../../src/api/gateway.ts";
import type { ModelConfig } from "../../src/config/types.ts";
import { LeaseBook } from "../../src/runtime/leases.ts";
import type { QmError } from "../../src/shared/errors.ts";
import { createLogger } from "../../src/shared/log.ts";
import { FakeTimers } from "../support/fake-timers.ts";

/** A book on fake timers, and granted requests that count their releases. */
function setup() {
  const timers = new FakeTimers();
  const lines: string[] = [];
  const book = new LeaseBook(
    createLogger("info", (l) => lines.push(l)),
    timers,
  );
  const released: string[] = [];
  const grant = (model: string): Lease => ({
    model: { id: model } as ModelConfig,
    waitedMs: 0,
    release: () => released.push(model),
  });
  return { timers, lines, book, released, grant };
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as QmError).code;
  }
  throw new Error("expected a throw");
}

describe("lease TTLs on the injected clock", () => {
  test("a lease nobody renews is released once, exactly when its TTL passes, and logged", () => {
    const t = setup();
    const info = t.book.add(t.grant("render"), 400);
    expect(info).toMatchObject({ model: "render", expires_in_s: 0 });
    expect(t.book.count("render")).toBe(1);
    t.timers.advance(399);
    expect(t.released).toEqual([]);
    t.timers.advance(1);
    expect(t.released).toEqual(["render"]);
    expect(t.book.count("render")).toBe(0);
    expect(t.lines.join("\n")).toContain(
      `lease ${info.lease} on "render" expired after 0.4 s without renewal; released`,
    );
    t.timers.advance(10_000);
    expect(t.released).toEqual(["render"]);
    expect(t.timers.pending).toBe(0);
    // Gone: its holder hears so.
    expect(codeOf(() => t.book.renew("render", info.lease))).toBe("not_found");
    expect(codeOf(() => t.book.release("render", info.lease))).toBe("not_found");
  });

  test("a renewal re-arms from now, with a new TTL or the old one", () => {
    const t = setup();
    const { lease } = t.book.add(t.grant("render"), 400);
    t.timers.advance(300);
    expect(t.book.renew("render", lease, 600).expires_in_s).toBe(1);
    t.timers.advance(599);
    expect(t.released).toEqual([]);
    t.book.renew("render", lease); // keeps 600 ms
    t.timers.advance(599);
    expect(t.released).toEqual([]);
    t.timers.advance(1);
    expect(t.released).toEqual(["render"]);
    expect(t.timers.pending).toBe(0);
  });

  test("expires_in_s counts down on the clock", () => {
    const t = setup();
    const { lease } = t.book.add(t.grant("render"), 60_000);
    t.timers.advance(20_000);
    expect(t.book.list("render")).toEqual([{ lease, model: "render", expires_in_s: 40 }]);
  });

  test("released by its holder: once, and its timer is gone", () => {
    const t = setup();
    const { lease } = t.book.add(t.grant("render"), 400);
    t.book.release("render", lease);
    expect(t.released).toEqual(["render"]);
    expect(t.timers.pending).toBe(0);
    t.timers.advance(1000);
    expect(t.released).toEqual(["render"]);
    expect(codeOf(() => t.book.release("render", lease))).toBe("not_found");
  });

  test("a lease is found only on its own model", () => {
    const t = setup();
    const { lease } = t.book.add(t.grant("render"), 400);
    expect(codeOf(() => t.book.renew("other", lease))).toBe("not_found");
    expect(t.book.list("other")).toEqual([]);
    expect(t.book.list(null).map((l) => l.model)).toEqual(["render"]);
  });

  test("an unload of a leased model is a conflict naming the lease, and releases nothing", () => {
    const t = setup();
    const a = t.book.add(t.grant("a"), 400);
    t.book.add(t.grant("b"), 400);
    let err: QmError | null = null;
    try {
      t.book.clearForUnload("a", false);
    } catch (e) {
      err = e as QmError;
    }
    expect(err?.code).toBe("conflict");
    expect(err?.status).toBe(409);
    expect(err?.message).toBe(
      `cannot unload: leased (${a.lease} on "a"); release the lease or add ?force=true to revoke it`,
    );
    expect(t.released).toEqual([]);
    t.book.clearForUnload("c", false); // nothing leased there: nothing to refuse
    expect(t.book.count("a") + t.book.count("b")).toBe(2);
  });

  test("a forced unload revokes the model's leases (all of them for null), each once, logged", () => {
    const t = setup();
    const a = t.book.add(t.grant("a"), 400);
    t.book.add(t.grant("b"), 400);
    t.book.add(t.grant("c"), 400);
    t.book.clearForUnload("a", true);
    expect(t.released).toEqual(["a"]);
    expect(t.lines.join("\n")).toContain(`lease ${a.lease} on "a" revoked by a forced unload`);
    t.book.clearForUnload(null, true);
    expect(t.released).toEqual(["a", "b", "c"]);
    expect(t.timers.pending).toBe(0);
    t.timers.advance(1000);
    expect(t.released).toEqual(["a", "b", "c"]);
  });

  test("releaseAll (shutdown) releases each lease once and leaves no timer", () => {
    const t = setup();
    t.book.add(t.grant("a"), 400);
    t.book.add(t.grant("b"), 400);
    t.book.releaseAll();
    expect(t.released).toEqual(["a", "b"]);
    expect(t.timers.pending).toBe(0);
    t.timers.advance(1000);
    expect(t.released).toEqual(["a", "b"]);
  });

  test("a TTL past setTimeout's range is armed in steps and still fires on time", () => {
    const t = setup();
    const days40 = 40 * 24 * 3600_000;
    t.book.add(t.grant("render"), days40);
    t.timers.advance(days40 - 1);
    expect(t.released).toEqual([]);
    t.timers.advance(1);
    expect(t.released).toEqual(["render"]);
  });
});
