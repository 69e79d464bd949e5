/**
 * The real prefetch source (src/runtime/prefetch-files.ts `fileSource`) on small temp files, and
 * the reader over it reading a split model's parts to the end.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHUNK_BYTES, Prefetcher } from "../../src/runtime/prefetch.ts";
import { fileSource } from "../../src/runtime/prefetch-files.ts";
import { createLogger } from "../../src/shared/log.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { settle } from "./fake-server.ts";

let dir = "";
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "qm-prefetch-"));
  await writeFile(join(dir, "m-00001-of-00002.gguf"), new Uint8Array(CHUNK_BYTES + 5));
  await writeFile(join(dir, "m-00002-of-00002.gguf"), new Uint8Array(7));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("fileSource", () => {
  test("sizes files; a missing path or a folder has none", () => {
    const s = fileSource();
    expect(s.size(join(dir, "m-00002-of-00002.gguf"))).toBe(7);
    expect(s.size(join(dir, "nope.gguf"))).toBeNull();
    expect(s.size(dir)).toBeNull();
  });

  test("reads at a position, at most a chunk, 0 at the end", async () => {
    const h = await fileSource().open(join(dir, "m-00001-of-00002.gguf"));
    expect(await h.read(0, 10 * CHUNK_BYTES)).toBe(CHUNK_BYTES);
    expect(await h.read(CHUNK_BYTES, CHUNK_BYTES)).toBe(5);
    expect(await h.read(CHUNK_BYTES + 5, CHUNK_BYTES)).toBe(0);
    await h.close();
  });

  test("the reader reads every part of a split model to the end", async () => {
    const lines: string[] = [];
    const p = new Prefetcher({
      source: fileSource(),
      memory: () => ({ totalBytes: 64 * 2 ** 30, availableBytes: 32 * 2 ** 30 }),
      clock: new FakeClock(),
      log: createLogger("info", (l) => lines.push(l)),
    });
    const files = ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"].map((f) => join(dir, f));
    p.plan([{ model: "m", files }]);
    // Real reads: let the event loop turn until they are in, however loaded the box (the
    // file system answers in its own time; 10 s only bounds a reader that never finishes).
    const giveUpAt = performance.now() + 10_000;
    while (p.progress("m") !== 1 && performance.now() < giveUpAt) await settle();
    expect(p.progress("m")).toBe(1);
    expect(lines.filter((l) => l.includes("prefetch: read")).length).toBe(2);
  });
});
