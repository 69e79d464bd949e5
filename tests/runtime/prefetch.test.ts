/**
 * The prefetch reader (src/runtime/prefetch.ts) over a fake source whose reads resolve only
 * when the test says, and fake memory figures: order, one read at a time, cancellation, the
 * memory bound, progress. No file, no sleep.
 */
import { describe, expect, test } from "bun:test";
import type { MemoryTotals } from "../../src/platform/index.ts";
import {
  CHUNK_BYTES,
  MEMORY_EVERY_BYTES,
  MIN_RESERVE_BYTES,
  Prefetcher,
} from "../../src/runtime/prefetch.ts";
import { createLogger } from "../../src/shared/log.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeSource, MiB } from "./fake-prefetch-source.ts";
import { settle } from "./fake-server.ts";

const GiB = 1 << 30;

function setup(sizes: Record<string, number>, memory: MemoryTotals | null = plenty()) {
  const source = new FakeSource(sizes);
  const lines: string[] = [];
  const mem = { now: memory };
  const p = new Prefetcher({
    source,
    memory: () => mem.now,
    clock: new FakeClock(),
    log: createLogger("info", (l) => lines.push(l)),
  });
  return { p, source, mem, lines };
}

function plenty(): MemoryTotals {
  return { totalBytes: 64 * GiB, availableBytes: 60 * GiB };
}

describe("one reader", () => {
  test("reads the planned files in order, a chunk at a time, one read in flight", async () => {
    const { p, source } = setup({ "/a": 2 * MiB + 10, "/b": MiB });
    p.plan([
      { model: "A", files: ["/a"] },
      { model: "B", files: ["/b"] },
    ]);
    expect(await source.drain()).toBe(4);
    expect(source.log).toEqual([
      "open /a",
      "read /a@0+1",
      "read /a@1+1",
      `read /a@2+${10 / MiB}`,
      "close /a",
      "open /b",
      "read /b@0+1",
      "close /b",
    ]);
    expect(source.maxInFlight).toBe(1);
    expect(p.progress("A")).toBe(1);
    expect(p.progress("B")).toBe(1);
  });

  test("a file two planned models share is read once and counts for both", async () => {
    const { p, source } = setup({ "/shared": 2 * MiB, "/own": 2 * MiB });
    p.plan([
      { model: "A", files: ["/shared"] },
      { model: "B", files: ["/shared", "/own"] },
    ]);
    await source.finish();
    expect(p.progress("A")).toBe(0.5);
    expect(p.progress("B")).toBe(0.25);
    await source.drain();
    expect(source.log.filter((l) => l.startsWith("open"))).toEqual(["open /shared", "open /own"]);
    expect(source.maxSamePathOpen).toBe(1);
    expect([p.progress("A"), p.progress("B")]).toEqual([1, 1]);
  });

  test("progress is null for a model not planned, or whose files cannot be read", async () => {
    const { p, source } = setup({ "/a": MiB });
    expect(p.progress("A")).toBeNull();
    p.plan([
      { model: "A", files: ["/a"] },
      { model: "gone", files: ["/missing"] },
    ]);
    expect(p.progress("A")).toBe(0);
    expect(p.progress("gone")).toBeNull();
    await source.drain();
    expect(source.log).not.toContain("open /missing");
  });
});

describe("a new plan", () => {
  test("a file no plan names stops at the next chunk and is closed; nothing else is read", async () => {
    const { p, source } = setup({ "/a": 10 * MiB });
    p.plan([{ model: "A", files: ["/a"] }]);
    await source.finish();
    p.plan([]);
    expect(p.progress("A")).toBeNull();
    await source.finish(); // the read in flight ends
    await settle();
    expect(source.pending).toEqual([]);
    expect(source.log).toEqual(["open /a", "read /a@0+1", "read /a@1+1", "close /a"]);
  });

  test("a model planned first is read first; the file it interrupted resumes where it was", async () => {
    const { p, source } = setup({ "/a": 3 * MiB, "/b": MiB });
    p.plan([{ model: "A", files: ["/a"] }]);
    await source.finish();
    p.plan([
      { model: "B", files: ["/b"] },
      { model: "A", files: ["/a"] },
    ]);
    await source.drain();
    expect(source.log).toEqual([
      "open /a",
      "read /a@0+1",
      "read /a@1+1",
      "close /a",
      "open /b",
      "read /b@0+1",
      "close /b",
      "open /a",
      "read /a@2+1",
      "close /a",
    ]);
    expect(source.maxInFlight).toBe(1);
    expect(source.maxSamePathOpen).toBe(1);
  });

  test("a file dropped and planned again is read from its start, never twice at once", async () => {
    const { p, source } = setup({ "/a": 4 * MiB });
    p.plan([{ model: "A", files: ["/a"] }]);
    await source.finish();
    p.plan([]);
    p.plan([{ model: "A", files: ["/a"] }]);
    expect(p.progress("A")).toBe(0);
    await source.drain();
    expect(source.maxSamePathOpen).toBe(1);
    expect(source.log.filter((l) => l.startsWith("read"))).toEqual([
      "read /a@0+1",
      "read /a@1+1",
      "read /a@0+1",
      "read /a@1+1",
      "read /a@2+1",
      "read /a@3+1",
    ]);
  });

  test("stop: the read in flight ends, the file is closed, later plans read nothing", async () => {
    const { p, source } = setup({ "/a": 4 * MiB });
    p.plan([{ model: "A", files: ["/a"] }]);
    await settle();
    p.stop();
    await source.finish();
    p.plan([{ model: "A", files: ["/a"] }]);
    await settle();
    expect(source.pending).toEqual([]);
    expect(source.log).toEqual(["open /a", "read /a@0+1", "close /a"]);
  });

  test("a read that fails skips that file and goes on with the next", async () => {
    const { p, source, lines } = setup({ "/a": 4 * MiB, "/b": MiB });
    p.plan([
      { model: "A", files: ["/a"] },
      { model: "B", files: ["/b"] },
    ]);
    await settle();
    source.pending.shift()!.reject(new Error("EIO"));
    await source.drain();
    expect(source.log).toEqual([
      "open /a",
      "read /a@0+1",
      "close /a",
      "open /b",
      "read /b@0+1",
      "close /b",
    ]);
    expect(lines.join("\n")).toContain("prefetch: cannot read /a: EIO");
    expect(p.progress("B")).toBe(1);
  });
});

describe("the memory bound", () => {
  const reserve = MIN_RESERVE_BYTES;

  test("reads stop once MemAvailable − reserve − bytes read reaches 0", async () => {
    // 2.5 MiB allowed: two whole chunks and half of one.
    const { p, source, lines } = setup(
      { "/a": 8 * MiB },
      { totalBytes: 16 * GiB, availableBytes: reserve + 2.5 * MiB },
    );
    p.plan([{ model: "A", files: ["/a"] }]);
    await source.drain();
    expect(source.log.filter((l) => l.startsWith("read"))).toEqual([
      "read /a@0+1",
      "read /a@1+1",
      "read /a@2+0.5",
    ]);
    expect(p.progress("A")).toBe(2.5 / 8);
    expect(lines.join("\n")).toContain("prefetch: stopped after 0.00 GB");
  });

  test("the reserve is 5 % of the box's memory where that is more than the minimum", async () => {
    const total = 100 * GiB; // 5 GiB reserve
    const { p, source } = setup(
      { "/a": 8 * MiB },
      { totalBytes: total, availableBytes: 5 * GiB + MiB },
    );
    p.plan([{ model: "A", files: ["/a"] }]);
    await source.drain();
    expect(source.log.filter((l) => l.startsWith("read"))).toEqual(["read /a@0+1"]);
  });

  test("bytes already read for the plan count against it; figures are read every 64 MiB", async () => {
    const size = MEMORY_EVERY_BYTES + 4 * MiB;
    const { p, source, mem } = setup({ "/a": size, "/b": 4 * MiB });
    let reads = 0;
    const figures = { totalBytes: 16 * GiB, availableBytes: reserve + 100 * GiB };
    mem.now = figures;
    p.plan([{ model: "A", files: ["/a"] }]);
    // The first 64 MiB go on the first reading, whatever happens meanwhile.
    for (; reads < MEMORY_EVERY_BYTES / CHUNK_BYTES - 1; reads++) await source.finish();
    figures.availableBytes = reserve + MEMORY_EVERY_BYTES + MiB; // a server grew meanwhile
    await source.finish();
    // At 64 MiB: 64 MiB read for the plan leave 1 MiB.
    expect(await source.drain()).toBe(1);
    expect(p.progress("A")).toBe((MEMORY_EVERY_BYTES + MiB) / size);
    // A new plan reads the figures again: nothing more fits, so nothing is read.
    p.plan([
      { model: "A", files: ["/a"] },
      { model: "B", files: ["/b"] },
    ]);
    expect(await source.drain()).toBe(0);
    // Dropping A frees what was read for it from the count.
    p.plan([{ model: "B", files: ["/b"] }]);
    expect(await source.drain()).toBe(4);
  });

  test("no figure for available memory: nothing is read", async () => {
    for (const memory of [null, { totalBytes: 16 * GiB, availableBytes: null }]) {
      const { p, source } = setup({ "/a": MiB }, memory);
      p.plan([{ model: "A", files: ["/a"] }]);
      await settle();
      expect(await source.drain()).toBe(0);
      expect(p.progress("A")).toBe(0);
    }
  });
});
