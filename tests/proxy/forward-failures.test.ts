/**
 * forward() when the upstream fails: hangs before its headers, goes silent mid-body, breaks
 * its SSE, or cannot be reached. A real upstream on port 0; time limits on a fake clock.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Deadline } from "../../src/proxy/deadline.ts";
import { type ForwardRequest, forward, type UpstreamCall } from "../../src/proxy/forward.ts";
import type { RelayEnd } from "../../src/proxy/relay.ts";
import { QmError } from "../../src/shared/errors.ts";
import { createLogger } from "../../src/shared/log.ts";
import { Sweep } from "../../src/shared/sweep.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { freePort } from "../support/net.ts";

/** Resolve once the upstream has the request for a path, and once it saw it go away. */
const arrived = new Map<string, () => void>();
const gone = new Map<string, () => void>();
const on = (hooks: Map<string, () => void>, path: string) =>
  new Promise<void>((resolve) => {
    hooks.set(path, resolve);
  });

const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch(req) {
    const url = new URL(req.url);
    arrived.get(url.pathname)?.();
    const quiet = () =>
      new Promise<void>((resolve) =>
        req.signal.addEventListener("abort", () => {
          gone.get(url.pathname)?.();
          resolve();
        }),
      );
    const body = (first: string, type: string) =>
      new Response(
        new ReadableStream({
          type: "direct",
          async pull(c) {
            c.write(first);
            await c.flush();
            await quiet();
            c.close();
          },
        }),
        { headers: { "content-type": type } },
      );
    switch (url.pathname) {
      case "/hang":
        return quiet().then(() => new Response(null));
      case "/stall-sse":
        return body('data: {"a":1}\n\n', "text/event-stream");
      case "/stall-json":
        return body('{"a":', "application/json");
      default:
        // `/sse?body=…`: exactly that body, then a clean end.
        return new Response(url.searchParams.get("body"), {
          headers: { "content-type": "text/event-stream" },
        });
    }
  },
});
afterAll(() => upstream.stop(true));

/** A deadline whose clock the test moves, and that says when a body read starts waiting. */
class TestDeadline extends Deadline {
  readonly clock: FakeTimers;
  private readonly own: Sweep<Deadline>;
  reports: string[] = [];
  private waiter: (() => void) | null = null;
  constructor(firstByteMs: number, stallMs: number) {
    const timers = new FakeTimers();
    const reports: string[] = [];
    const sweep = new Sweep<Deadline>(timers, 1);
    super({
      model: "m",
      firstByteMs,
      stallMs,
      sweep,
      report: { stalled: () => reports.push("stalled"), answered: () => reports.push("answered") },
    });
    this.clock = timers;
    this.reports = reports;
    this.own = sweep;
  }
  override reading(): void {
    super.reading();
    this.waiter?.();
  }
  /** Deadlines still live in this one's sweep (a finished call leaves none). */
  get swept(): number {
    return this.own.size;
  }
  /** Resolves at the next read of the body that starts waiting. */
  nextRead(): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}

function call(path: string, over: Partial<ForwardRequest> & { deadline?: Deadline } = {}) {
  const ends: RelayEnd[] = [];
  const logged: string[] = [];
  const { deadline, ...rest } = over;
  const upstreamCall: UpstreamCall = {
    modelId: "m",
    deadline: deadline ?? new Deadline({ model: "m", firstByteMs: 0, stallMs: 0 }),
    stderrTail: () => ["CUDA error: out of memory"],
    log: createLogger("warn", (l) => logged.push(l)),
    observer: null,
    ended: (e) => ends.push(e),
    tag: () => {},
  };
  const req: ForwardRequest = {
    base: `http://127.0.0.1:${upstream.port}`,
    pathAndQuery: path,
    method: "GET",
    headers: new Headers(),
    body: null,
    call: upstreamCall,
    ...rest,
  };
  return { pending: forward(req), ends, logged };
}

const errorOf = (text: string) =>
  (JSON.parse(text.trim().split("\n").at(-1)!.slice(6)) as { error: Record<string, string> }).error;

describe("time limits", () => {
  test("no headers in time: a 504 QmError, the upstream request aborted, the end reported", async () => {
    const d = new TestDeadline(1000, 0);
    const left = on(gone, "/hang");
    const taken = on(arrived, "/hang");
    const { pending, ends } = call("/hang", { deadline: d });
    await taken;
    d.clock.advance(1000);
    const err = (await pending.catch((e) => e)) as QmError;
    expect(err).toBeInstanceOf(QmError);
    expect(err.code).toBe("upstream_timeout");
    expect(err.status).toBe(504);
    expect(err.message).toContain("first_byte_timeout_s");
    await left;
    expect(ends.map((e) => e.kind)).toEqual(["failed"]);
    expect(d.reports).toEqual(["stalled"]);
  });

  test("an SSE body that goes silent: an error event, then the end, upstream aborted", async () => {
    const d = new TestDeadline(1000, 500);
    const left = on(gone, "/stall-sse");
    const { pending, ends } = call("/stall-sse", { deadline: d });
    const res = await pending;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const waiting = d.nextRead();
    let text = decoder.decode((await reader.read()).value);
    await waiting;
    d.clock.advance(500);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text.startsWith('data: {"a":1}\n\n')).toBe(true);
    expect(errorOf(text)).toMatchObject({ code: "upstream_timeout", type: "upstream_error" });
    expect(errorOf(text).message).toContain("stall_timeout_s");
    await left;
    expect(ends.map((e) => e.kind)).toEqual(["failed"]);
    expect(d.reports).toEqual(["stalled"]);
  });

  test("a JSON body that stops halfway: a 504 QmError (the headers alone are not an answer)", async () => {
    const d = new TestDeadline(1000, 500);
    const waiting = d.nextRead();
    const { pending, ends } = call("/stall-json", { deadline: d });
    // The whole body is one timed read: it is still waiting for the second half.
    await waiting;
    d.clock.advance(500);
    const err = (await pending.catch((e) => e)) as QmError;
    expect(err.code).toBe("upstream_timeout");
    expect(ends.map((e) => e.kind)).toEqual(["failed"]);
  });

  test("an answer that completes is reported answered and leaves no timer", async () => {
    const d = new TestDeadline(1000, 500);
    const { pending } = call(`/sse?body=${encodeURIComponent("data: {}\n\ndata: [DONE]\n\n")}`, {
      deadline: d,
      checkSse: { requireDone: true },
    });
    expect(await (await pending).text()).toBe("data: {}\n\ndata: [DONE]\n\n");
    expect(d.reports).toEqual(["answered"]);
    expect(d.swept).toBe(0);
  });
});

describe("broken SSE ends with an error event", () => {
  const through = async (body: string, requireDone = true) => {
    const { pending, ends } = call(`/sse?body=${encodeURIComponent(body)}`, {
      checkSse: { requireDone },
    });
    return { text: await (await pending).text(), ends };
  };

  test("no [DONE]; cut mid-event; a payload that is not JSON", async () => {
    const cases: [string, string][] = [
      ['data: {"a":1}\n\n', 'model "m" stream ended unexpectedly (no data: [DONE])'],
      ['data: {"a":1}\n\ndata: {"b"', 'model "m" stream ended unexpectedly (mid-event)'],
      ["data: oops\n\ndata: [DONE]\n\n", 'model "m" sent an event that is not JSON'],
    ];
    for (const [body, message] of cases) {
      const { text, ends } = await through(body);
      expect(errorOf(text)).toEqual({
        message,
        type: "upstream_error",
        param: null as never,
        code: "upstream_failed",
      });
      expect(ends.map((e) => e.kind)).toEqual(["failed"]);
    }
    // Nothing follows the bad event: the upstream's [DONE] is not relayed after the error.
    expect((await through("data: oops\n\ndata: [DONE]\n\n")).text).not.toContain("[DONE]");
  });

  test("a sound stream is relayed byte for byte; without requireDone no [DONE] is needed", async () => {
    const sound = 'data: {"a":1}\n\ndata: [DONE]\n\n';
    expect((await through(sound)).text).toBe(sound);
    expect((await through('data: {"a":1}\n\n', false)).text).toBe('data: {"a":1}\n\n');
  });
});

describe("an upstream that cannot be reached", () => {
  test("a plain cause for the client; the raw error and the stderr tail only in qm's log", async () => {
    const { pending, ends, logged } = call("/", { base: `http://127.0.0.1:${freePort()}` });
    const err = (await pending.catch((e) => e)) as QmError;
    expect(err.code).toBe("upstream_failed");
    expect(err.message).toBe('model "m" failed to answer: connection refused');
    expect(ends.map((e) => e.kind)).toEqual(["failed"]);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain("CUDA error: out of memory");
  });
});
