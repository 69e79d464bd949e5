/** The wait-status placeholder's progress comments, on injected ticks and clocks. */
import { describe, expect, test } from "bun:test";
import {
  type LoadProgress,
  loadingStatus,
  placeholderStream,
  type WaitProgress,
} from "../../src/proxy/wait-status.ts";
import { sseResponse } from "../support/openai-answers.ts";

describe("loadingStatus", () => {
  test("percent and eta from the expected load, seconds so far without one", () => {
    expect(loadingStatus({ elapsedMs: 4200, expectedMs: 10_000 })).toBe(
      "qm-status: loading 42% eta 6s",
    );
    // Past the estimate: never 100% before it is ready, eta 0.
    expect(loadingStatus({ elapsedMs: 12_000, expectedMs: 10_000 })).toBe(
      "qm-status: loading 99% eta 0s",
    );
    expect(loadingStatus({ elapsedMs: 3400, expectedMs: null })).toBe("qm-status: loading 3s");
  });
});

describe("placeholderStream", () => {
  test("a comment every tick: load progress while loading, the wait before; then the answer", async () => {
    let tick: () => void = () => {};
    let every = 0;
    let progress: WaitProgress | null = null;
    let answer: (r: Response) => void = () => {};
    let load: LoadProgress | null = { elapsedMs: 2100, expectedMs: 7000 };
    const stream = placeholderStream({
      model: "m",
      start: (p) => {
        progress = p;
        return new Promise<Response>((r) => {
          answer = r;
        });
      },
      onCancel: () => {},
      every: (ms, fn) => {
        every = ms;
        tick = fn;
        return () => {};
      },
      now: () => 5000,
      loadProgress: () => load,
    });
    expect(every).toBe(2000);
    const reader = stream.getReader();
    const next = async () => new TextDecoder().decode((await reader.read()).value);
    progress!.onPosition(2);
    expect(await next()).toBe(": qm-status: waiting 2\n\n");
    tick();
    expect(await next()).toBe(": qm: waiting for m, position 2, 0s so far\n\n");
    progress!.onLoading();
    expect(await next()).toBe(": qm-status: loading\n\n");
    tick();
    expect(await next()).toBe(": qm-status: loading 30% eta 5s\n\n");
    load = null;
    tick();
    expect(await next()).toBe(": qm: loading m, 0s so far\n\n");
    answer(sseResponse("data: [DONE]\n\n"));
    expect(await next()).toBe("data: [DONE]\n\n");
    expect((await reader.read()).done).toBe(true);
  });
});
