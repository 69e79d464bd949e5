/**
 * The database file: its rows round-trip, a writer killed mid-run leaves a file that opens with
 * everything written before, and a file that cannot be opened is a reason (qm then runs on
 * memory only).
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { RequestRecord } from "../../src/observe/record.ts";
import { createLogger } from "../../src/shared/log.ts";
import { StateDb } from "../../src/store/database.ts";
import { usageRow } from "../support/store-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "qm-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger("error", () => {});
const bounds = { maxAgeMs: 365 * 24 * 3600 * 1000, maxBytes: 1 << 30 };

function open(file: string, now = () => 1_000_000) {
  const r = StateDb.open(file, { bounds, log, now });
  if (!r.ok) throw new Error(r.reason);
  return r.db;
}

function record(id: number, key = "alice", time = 1_000_000): RequestRecord {
  return {
    id,
    time,
    key,
    model: "m",
    api: "openai",
    status: 200,
    answered: true,
    wait_ms: 5,
    swap: false,
    duration_ms: 10,
    ttft_ms: null,
    prompt_tokens: 3,
    completion_tokens: 4,
    cached_tokens: null,
    finish_reason: "stop",
  };
}

describe("rows", () => {
  test("responses, requests and usage come back as written; queued ones are found before", () => {
    const file = join(dir, "rows.db");
    const db = open(file);
    const entry = {
      owner: "alice",
      response: { id: "resp_1", output: [] },
      conversation: [{ role: "user", content: "hi" }],
      inputItems: [{ id: "msg_1", type: "message" }],
    };
    db.responses.put("resp_1", entry);
    // Queued, not yet written: found all the same.
    expect(db.responses.get("resp_1")).toEqual(entry);
    db.requests.put(record(7), () => ({
      request: {
        method: "POST",
        path: "/v1/x",
        headers: {},
        body: { bytes: 0, truncated: false, text: "" },
      },
      answer: null,
    }));
    db.requests.put(record(8, "bob"), null);
    db.usage.put({
      hour: 0,
      key: "alice",
      model: "m",
      requests: 2,
      prompt_tokens: 6,
      completion_tokens: 8,
      cached_tokens: 0,
      wait_ms: 10,
      swaps: 1,
    });
    expect(db.queued).toBe(4);
    db.close();

    const again = open(file);
    expect(again.responses.get("resp_1")).toEqual(entry);
    expect(again.responses.get("resp_2")).toBeNull();
    expect(again.requests.lastId()).toBe(8);
    expect(again.requests.latest(10).map((r) => [r.id, r.key])).toEqual([
      [7, "alice"],
      [8, "bob"],
    ]);
    expect(again.requests.get(7)?.capture?.request.path).toBe("/v1/x");
    expect(again.requests.get(8)?.capture).toBeNull();
    expect(again.usage.since(0)).toEqual([
      {
        hour: 0,
        key: "alice",
        model: "m",
        requests: 2,
        prompt_tokens: 6,
        completion_tokens: 8,
        cached_tokens: 0,
        wait_ms: 10,
        swaps: 1,
      },
    ]);
    again.responses.delete("resp_1");
    expect(again.responses.get("resp_1")).toBeNull();
    again.flush();
    expect(again.responses.get("resp_1")).toBeNull();
    expect(again.counts()).toEqual({ responses: 0, requests: 2, usage: 1 });
    again.close();
  });

  test("a usage row changed twice before a flush is written once, with its last value", () => {
    const db = open(":memory:");
    const row = usageRow({ key: "a" });
    db.usage.put(row);
    row.requests = 2;
    db.usage.put(row);
    expect(db.queued).toBe(1);
    db.flush();
    expect(db.usage.since(0)[0]?.requests).toBe(2);
    db.close();
  });
});

describe("a killed writer", () => {
  test("loses what was queued, never the file: everything written before opens", async () => {
    const file = join(dir, "killed.db");
    const script = `
      import { StateDb } from ${JSON.stringify(resolve(import.meta.dir, "../../src/store/database.ts"))};
      import { createLogger } from ${JSON.stringify(resolve(import.meta.dir, "../../src/shared/log.ts"))};
      const r = StateDb.open(${JSON.stringify(file)}, { bounds: { maxAgeMs: 1e12, maxBytes: 1e12 }, log: createLogger("error", () => {}), now: () => 1000000 });
      if (!r.ok) { console.error(r.reason); process.exit(3); }
      const rec = (id) => ({ id, time: 1000000, key: "k", model: "m", api: "openai", status: 200, answered: true, wait_ms: 0, swap: false, duration_ms: 1, ttft_ms: null, prompt_tokens: null, completion_tokens: null, cached_tokens: null, finish_reason: null });
      for (let i = 1; i <= 500; i++) r.db.requests.put(rec(i), null);
      r.db.flush();
      for (let i = 501; i <= 600; i++) r.db.requests.put(rec(i), null);
      process.kill(process.pid, "SIGKILL");
    `;
    const child = Bun.spawn([process.execPath, "-e", script], { stderr: "pipe" });
    expect(await child.exited).not.toBe(0);
    expect(child.signalCode).toBe("SIGKILL");
    const db = open(file);
    expect(db.requests.lastId()).toBe(500);
    expect(db.counts().requests).toBe(500);
    db.close();
  });
});

describe("cannot be opened", () => {
  test("a read-only file system, a folder, a file that is no database, a newer schema: a reason", () => {
    const folder = join(dir, "folder.db");
    mkdirSync(folder);
    const junk = join(dir, "junk.db");
    writeFileSync(junk, "not a database ".repeat(512));
    const reason = (file: string) => {
      const r = StateDb.open(file, { bounds, log });
      return r.ok ? "opened" : r.reason;
    };
    expect(reason("/proc/qm.db")).toBe(
      "/proc/qm.db: cannot open or create the file (is the folder writable?)",
    );
    expect(reason(folder)).toBe(
      `${folder}: cannot open or create the file (is the folder writable?)`,
    );
    expect(reason(junk)).toBe(
      `${junk}: the file is not an SQLite database (damaged, or another program's)`,
    );
    const newer = join(dir, "newer.db");
    open(newer).close();
    const raw = new Database(newer);
    raw.run("PRAGMA user_version = 99");
    raw.close();
    expect(reason(newer)).toBe(`${newer} was written by a newer qm (schema 99, this qm knows 1)`);
  });

  test("a file broken under a running qm: the next write gives the database up", () => {
    const file = join(dir, "broken.db");
    const db = open(file);
    (db as unknown as { db: { close(): void } }).db.close();
    db.requests.put(record(1), null);
    db.flush();
    expect(db.failed).not.toBeNull();
    expect(db.requests.lastId()).toBe(0);
    expect(db.responses.get("x")).toBeNull();
  });
});
