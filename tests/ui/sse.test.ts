/**
 * `follow`: the dashboard's event stream across drops. Each connection is a Response the test
 * makes; the pauses between tries are recorded instead of waited.
 */
import { describe, expect, test } from "bun:test";
import { HttpError } from "../../src/ui/app/errors.ts";
import { FIRST_PAUSE_MS, follow, MAX_PAUSE_MS, readSse } from "../../src/ui/app/sse.ts";

/** A Response whose body is `chunks`, then its end (a dropped connection). */
function stream(...chunks: string[]): Response {
  const enc = new TextEncoder();
  return new Response(
    new ReadableStream({
      start(c) {
        for (const chunk of chunks) c.enqueue(enc.encode(chunk));
        c.close();
      },
    }),
  );
}

describe("readSse", () => {
  test("events and comments, however the bytes are split", async () => {
    const wire = ': qm-status: loading\n\nid: 3\nevent: model\ndata: {"a":1}\n\ndata: é\n\n';
    const bytes = new TextEncoder().encode(wire);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const seen: string[] = [];
      const res = new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(bytes.slice(0, cut));
            c.enqueue(bytes.slice(cut));
            c.close();
          },
        }),
      );
      await readSse(res, {
        event: (e) => seen.push(`${e.id ?? "-"} ${e.event ?? "message"} ${e.data}`),
        comment: (c) => seen.push(`:${c}`),
      });
      // The parser drops the one space after the colon (WHATWG HTML §9.2.6 does so for fields).
      expect(seen).toEqual([":qm-status: loading", '3 model {"a":1}', "- message é"]);
    }
  });
});

describe("follow", () => {
  test("after a drop it reconnects, telling the server the last event it saw", async () => {
    const asked: (string | null)[] = [];
    const pauses: number[] = [];
    let lastId = 0;
    let stop = () => {};
    const done = new Promise<void>((resolve) => {
      const replies = [
        stream("id: 5\nevent: model\ndata: {}\n\n", "id: 6\nevent: request\ndata: {}\n\n"),
        stream("id: 9\nevent: model\ndata: {}\n\n"),
      ];
      stop = follow(
        async () => {
          asked.push(lastId > 0 ? String(lastId) : null);
          const next = replies.shift();
          if (!next) {
            resolve();
            return new Promise<Response>(() => {});
          }
          return next;
        },
        {
          handlers: {
            event: (e) => {
              lastId = Number(e.id);
            },
          },
        },
        async (ms) => {
          pauses.push(ms);
        },
      );
    });
    await done;
    stop();
    expect(asked).toEqual([null, "6", "9"]);
    // Each connection opened, so each pause is the first one again.
    expect(pauses).toEqual([FIRST_PAUSE_MS, FIRST_PAUSE_MS]);
  });

  test("failures back off, doubling up to the cap; a 401 stops it for good", async () => {
    const pauses: number[] = [];
    const events: string[] = [];
    let tries = 0;
    const stopped = new Promise<void>((resolve) => {
      follow(
        async () => {
          tries++;
          if (tries === 7) throw new HttpError(401, "invalid API key");
          throw new TypeError("Failed to fetch");
        },
        {
          handlers: { event: () => {} },
          onDrop: (err) => events.push(`drop ${(err as Error).message}`),
          onUnauthorized: () => {
            events.push("unauthorized");
            resolve();
          },
        },
        async (ms) => {
          pauses.push(ms);
        },
      );
    });
    await stopped;
    expect(pauses).toEqual([1000, 2000, 4000, 8000, MAX_PAUSE_MS, MAX_PAUSE_MS]);
    expect(events).toEqual([...Array(6).fill("drop Failed to fetch"), "unauthorized"]);
    expect(tries).toBe(7);
  });

  test("stopping aborts the open connection and tries no more", async () => {
    let signal: AbortSignal | null = null;
    let opens = 0;
    const stop = follow(
      (s) => {
        opens++;
        signal = s;
        return new Promise<Response>(() => {});
      },
      { handlers: { event: () => {} } },
      async () => {},
    );
    await Promise.resolve();
    stop();
    expect((signal as AbortSignal | null)?.aborted).toBe(true);
    await Promise.resolve();
    expect(opens).toBe(1);
  });
});
