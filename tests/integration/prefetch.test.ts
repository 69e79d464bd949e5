import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

describe("prefetch from dist/qm", () => {
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
