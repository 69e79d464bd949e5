/**
 * Lines and levels (createLogger); the log outlives stderr (fallbackSink) and keeps its recent
 * lines (LogFeed).
 */
import { describe, expect, test } from "bun:test";
import { createLogger, fallbackSink, type LineStream, LogFeed } from "../../src/shared/log.ts";

/** A stream that takes lines until `fail` is called, then throws or raises `error`. */
class FakeStream implements LineStream {
  readonly written: string[] = [];
  private onError: ((err: Error) => void) | null = null;
  throwing: string | null = null;
  write(text: string): boolean {
    if (this.throwing) throw Object.assign(new Error(this.throwing), { code: this.throwing });
    this.written.push(text);
    return true;
  }
  on(_event: "error", listener: (err: Error) => void): void {
    this.onError = listener;
  }
  /** What a closed pipe does: the write went nowhere, the error comes after. */
  raise(code: string): void {
    this.onError?.(Object.assign(new Error(code), { code }));
  }
}

const at = new Date("2026-12-01T00:00:00.000Z");

function files() {
  const out = new Map<string, string>();
  let failing = false;
  return {
    out,
    fail: () => {
      failing = true;
    },
    append: (path: string, text: string) => {
      if (failing) throw new Error("EROFS");
      out.set(path, (out.get(path) ?? "") + text);
    },
  };
}

describe("createLogger", () => {
  const at = new Date("2026-11-30T03:00:00.000Z");

  test("formats lines and filters by level", () => {
    const lines: string[] = [];
    const log = createLogger(
      "info",
      (l) => lines.push(l),
      () => at,
    );
    log.debug("hidden");
    log.info("hello");
    log.warn("careful");
    log.error("broken");
    expect(lines).toEqual([
      "2026-11-30T03:00:00.000Z INFO  hello",
      "2026-11-30T03:00:00.000Z WARN  careful",
      "2026-11-30T03:00:00.000Z ERROR broken",
    ]);
    expect(log.enabled("debug")).toBe(false);
    expect(log.enabled("warn")).toBe(true);
  });

  test("debug level writes everything", () => {
    const lines: string[] = [];
    createLogger(
      "debug",
      (l) => lines.push(l),
      () => at,
    ).debug("x");
    expect(lines).toEqual(["2026-11-30T03:00:00.000Z DEBUG x"]);
  });
});

describe("fallbackSink", () => {
  test("lines go to the stream until its error event, then to the file after one line saying why", () => {
    const stream = new FakeStream();
    const f = files();
    const sink = fallbackSink({ file: "/s/qm.log", stream, append: f.append, now: () => at });
    sink("one");
    stream.raise("EPIPE");
    sink("two");
    sink("three");
    expect(stream.written).toEqual(["one\n"]);
    expect(f.out.get("/s/qm.log")).toBe(
      "2026-12-01T00:00:00.000Z WARN  stderr stopped taking lines (EPIPE): the log goes on here\ntwo\nthree\n",
    );
  });

  test("a write that throws is not lost: it and every later line go to the file", () => {
    const stream = new FakeStream();
    const f = files();
    const sink = fallbackSink({ file: "/s/qm.log", stream, append: f.append, now: () => at });
    stream.throwing = "EIO";
    sink("one");
    stream.throwing = null; // never tried again
    sink("two");
    expect(stream.written).toEqual([]);
    expect(f.out.get("/s/qm.log")).toEndWith("(EIO): the log goes on here\none\ntwo\n");
  });

  test("abandon() switches before any write fails; nowhere to write drops lines, never throws", () => {
    const stream = new FakeStream();
    const f = files();
    const sink = fallbackSink({ file: "/s/qm.log", stream, append: f.append, now: () => at });
    sink.abandon("the terminal closed");
    sink("one");
    expect(stream.written).toEqual([]);
    expect(f.out.get("/s/qm.log")).toContain("(the terminal closed)");
    f.fail();
    expect(() => sink("two")).not.toThrow();
    const dropped = fallbackSink({ file: null, stream, append: f.append });
    stream.raise("EPIPE");
    expect(() => dropped("three")).not.toThrow();
  });
});

describe("LogFeed", () => {
  test("keeps the last lines a logger wrote and passes each new one to followers", () => {
    const feed = new LogFeed(2);
    const sunk: string[] = [];
    const log = createLogger(
      "info",
      (l) => sunk.push(l),
      () => at,
      feed,
    );
    expect(log.feed).toBe(feed);
    const seen: string[] = [];
    const stop = feed.follow((l) => seen.push(l));
    log.info("a");
    log.debug("not at this level");
    log.warn("b");
    stop();
    log.error("c");
    expect(sunk).toHaveLength(3);
    expect(feed.lines()).toEqual([
      "2026-12-01T00:00:00.000Z WARN  b",
      "2026-12-01T00:00:00.000Z ERROR c",
    ]);
    expect(seen).toEqual(["2026-12-01T00:00:00.000Z INFO  a", "2026-12-01T00:00:00.000Z WARN  b"]);
  });

  test("a follower that throws is dropped; the others go on", () => {
    const feed = new LogFeed();
    const seen: string[] = [];
    feed.follow(() => {
      throw new Error("gone");
    });
    feed.follow((l) => seen.push(l));
    feed.push("x");
    feed.push("y");
    expect(seen).toEqual(["x", "y"]);
  });
});
