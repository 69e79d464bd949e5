/**
 * Prefetch in the runtime (src/runtime/design.md "Prefetch"): the real scheduler, waiters and
 * swap runner over fake processes, a fake file source and fake memory figures. Which model is
 * read for and when it stops being read for; status `prefetched`.
 */
import { describe, expect, test } from "bun:test";
import { FakeSource, MiB } from "./fake-prefetch-source.ts";
import { settle } from "./fake-server.ts";
import { HEAD, runtimeHarness } from "./harness.ts";

const B1 = "/m/b-00001-of-00002.gguf";
const B2 = "/m/b-00002-of-00002.gguf";
const GiB = 1 << 30;

const TOML = `${HEAD}
[models.a]
cmd = "llama-server -m /m/a.gguf"
proxy = "http://127.0.0.1:9"

[models.b]
cmd = "llama-server -m ${B1}"
proxy = "http://127.0.0.1:9"

[models.off]
cmd = "llama-server -m /m/off.gguf"
proxy = "http://127.0.0.1:9"
prefetch = false
`;

function setup() {
  const source = new FakeSource({ "/m/a.gguf": 2 * MiB, [B1]: 2 * MiB, [B2]: 2 * MiB });
  const t = runtimeHarness(TOML, {
    source,
    memory: () => ({ totalBytes: 64 * GiB, availableBytes: 32 * GiB }),
  });
  /**
   * Brings `a` up. Its own swap plans it until it spawns: one read goes out, and ends with the
   * spawn. Then the record starts afresh.
   */
  const upA = async () => {
    const lease = await t.up("a");
    await source.drain();
    expect(source.log).toEqual(["open /m/a.gguf", "read /m/a.gguf@0+1", "close /m/a.gguf"]);
    source.log.length = 0;
    return lease;
  };
  return { t, source, upA, reads: () => source.log.filter((l) => l.startsWith("read")) };
}

describe("prefetch in the runtime", () => {
  test("a request queued behind a busy model: its model's files are read; status shows it; its spawn ends it", async () => {
    const { t, source, upA } = setup();
    const lease = await upA();
    const b = t.acquire("b");
    await settle();
    expect(t.status("b").queue_positions).toEqual([1]);
    expect(t.status("b").prefetched).toBe(0);
    await source.finish();
    expect(t.status("b").prefetched).toBe(0.25);
    await source.drain();
    expect(t.status("b").prefetched).toBe(1);
    expect(source.log).toEqual([
      `open ${B1}`,
      `read ${B1}@0+1`,
      `read ${B1}@1+1`,
      `close ${B1}`,
      `open ${B2}`,
      `read ${B2}@0+1`,
      `read ${B2}@1+1`,
      `close ${B2}`,
    ]);
    // The running model's own files are never read, nor shown.
    expect(t.status("a").prefetched).toBeNull();
    // a drains; the swap stops it and spawns b, which loads: `load`, no `prefetched`.
    lease.release();
    await settle();
    t.fakes.of("a").stopped();
    await settle();
    expect(t.fakes.of("b").state).toBe("starting");
    expect(t.status("b").prefetched).toBeNull();
    t.fakes.of("b").ready();
    await settle();
    expect(b.value?.model.id).toBe("b");
  });

  test("a swap's target is read while the evicted model stops, and no more once it spawns", async () => {
    const { t, source, reads, upA } = setup();
    (await upA()).release();
    await settle();
    t.acquire("b");
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
    await source.finish();
    expect(t.status("b").prefetched).toBe(0.25);
    // a is gone: b spawns while its next read is in flight.
    t.fakes.of("a").stopped();
    await settle();
    expect(t.fakes.of("b").state).toBe("starting");
    expect(t.status("b").prefetched).toBeNull();
    await source.finish();
    await settle();
    expect(source.pending).toEqual([]);
    expect(reads()).toEqual([`read ${B1}@0+1`, `read ${B1}@1+1`]);
    expect(source.log.at(-1)).toBe(`close ${B1}`);
  });

  test("a client that leaves the line takes its model out of the plan", async () => {
    const { t, source, reads, upA } = setup();
    const lease = await upA();
    const leave = new AbortController();
    const b = t.acquire("b", {}, leave.signal);
    await settle();
    expect(source.pending.length).toBe(1);
    leave.abort();
    await settle();
    expect(b.error?.code).toBe("cancelled");
    expect(t.status("b").prefetched).toBeNull();
    await source.finish();
    expect(source.pending).toEqual([]);
    expect(reads()).toEqual([`read ${B1}@0+1`]);
    lease.release();
  });

  test("prefetch = false: queued, never read", async () => {
    const { t, source, upA } = setup();
    const lease = await upA();
    t.acquire("off");
    await settle();
    expect(t.status("off").queue_positions).toEqual([1]);
    expect(t.status("off").prefetched).toBeNull();
    expect(source.log).toEqual([]);
    lease.release();
  });

  test("shutdown stops the reads", async () => {
    const { t, source, reads, upA } = setup();
    const lease = await upA();
    t.acquire("b");
    await settle();
    t.rt.beginShutdown();
    await source.finish();
    expect(source.pending).toEqual([]);
    expect(reads()).toEqual([`read ${B1}@0+1`]);
    lease.release();
  });
});
