import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, postJson, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// dist/qm with the demo upstream, one model at a time: a request for `next` queues behind a
// lease on `first`, and meanwhile qm reads next's GGUF (a small temp file) into the page
// cache — the real reader, on the box's real memory figures.
setDefaultTimeout(30_000);

let qm: QmServer;
const dir = mkdtempSync(join(tmpdir(), "qm-prefetch-"));
const file = join(dir, "next.gguf");

beforeAll(async () => {
  writeFileSync(file, new Uint8Array(6 * 2 ** 20 + 123));
  qm = await serve(`
[resources]
gpu_probe = "off"

[models.first]
cmd = "\${demo}"
[models.next]
cmd = "\${demo} -m ${file}"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

const next = async () => (await status(qm.url)).models.find((m) => m.id === "next")!;

/** Linux's MemAvailable in bytes; 0 where it cannot be read (then prefetch reads nothing). */
function memAvailable(): number {
  try {
    const kb = /MemAvailable:\s+(\d+) kB/.exec(readFileSync("/proc/meminfo", "utf8"));
    return kb ? Number(kb[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
// Prefetch keeps a reserve of at least 2 GiB free: on a box with less, it rightly reads nothing.
const roomy = memAvailable() > 3 * 2 ** 30;
const title = `prefetch from dist/qm${roomy ? "" : " (skipped: under 3 GiB of memory available, prefetch's reserve)"}`;

describe.skipIf(!roomy)(title, () => {
  test("a request queued behind a lease: next's file is read (prefetched 1), then it loads", async () => {
    const taken = await postJson(qm.url, "/api/models/first/lease");
    expect(taken.status).toBe(200);
    const { lease } = (await taken.json()) as { lease: string };
    expect((await next()).prefetched).toBeNull();
    const answer = chat(qm.url, "next");
    const read = await until(next, (m) => m.prefetched === 1);
    expect(read).toMatchObject({ state: "stopped", queued: 1, prefetched: 1 });
    expect(qm.log()).toContain(`prefetch: read ${file} (0.01 GB in`);
    const released = await fetch(`${qm.url}/api/models/first/lease/${lease}`, {
      method: "DELETE",
    });
    expect(released.status).toBe(200);
    const res = await answer;
    expect(res.status).toBe(200);
    await res.json();
    expect(await next()).toMatchObject({ state: "ready", prefetched: null });
  });
});
