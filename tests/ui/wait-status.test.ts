import { describe, expect, test } from "bun:test";
import { createParser } from "eventsource-parser";
import { describeWait, parseWaitStatus } from "../../src/ui/app/wait-status.ts";

describe("parseWaitStatus", () => {
  test.each([
    [" qm-status: waiting 2", { kind: "waiting", position: 2 }],
    ["qm-status: waiting 12", { kind: "waiting", position: 12 }],
    [
      " qm-status: loading",
      { kind: "loading", percent: null, etaS: null, elapsedS: null, stage: null },
    ],
    [
      " qm-status: loading 42% eta 7s",
      { kind: "loading", percent: 42, etaS: 7, elapsedS: null, stage: null },
    ],
    [
      " qm-status: loading 0% eta 120s",
      { kind: "loading", percent: 0, etaS: 120, elapsedS: null, stage: null },
    ],
    [
      " qm-status: loading 12s",
      { kind: "loading", percent: null, etaS: null, elapsedS: 12, stage: null },
    ],
    // The model's log shows its stage (llama-server's): the percentage without a past load.
    [
      " qm-status: loading 42% eta 7s (loading tensors)",
      { kind: "loading", percent: 42, etaS: 7, elapsedS: null, stage: "loading tensors" },
    ],
    [
      " qm-status: loading 15% (loading tensors)",
      { kind: "loading", percent: 15, etaS: null, elapsedS: null, stage: "loading tensors" },
    ],
    [
      " qm-status: loading 3s (opening the model)",
      { kind: "loading", percent: null, etaS: null, elapsedS: 3, stage: "opening the model" },
    ],
  ])("%p", (comment, want) => {
    expect(parseWaitStatus(comment)).toEqual(want as never);
  });

  test.each([
    " keep-alive",
    " qm: waiting for m, position 2, 3s so far",
    " qm-status: waiting",
    " qm-status: waiting two",
    " qm-status: loading 42% eta",
    " qm-status: loading (",
    " qm-status: loading soon",
    " qm-status: loadingx",
    "",
  ])("%p is no wait status", (comment) => {
    expect(parseWaitStatus(comment)).toBeNull();
  });

  test("the lines the playground shows", () => {
    expect(describeWait({ kind: "waiting", position: 2 })).toBe("waiting its turn (#2)");
    const loading = { kind: "loading", percent: null, etaS: null, elapsedS: null, stage: null };
    const line = (over: object) => describeWait({ ...loading, ...over } as never);
    expect(line({ percent: 42, etaS: 7 })).toBe("loading 42% · eta 7s");
    expect(line({ percent: 42, etaS: 7, stage: "loading tensors" })).toBe(
      "loading 42% · eta 7s · loading tensors",
    );
    expect(line({ percent: 15, stage: "loading tensors" })).toBe("loading 15% · loading tensors");
    expect(line({ elapsedS: 3 })).toBe("loading · 3s so far");
    expect(line({})).toBe("loading the model…");
  });

  test("what eventsource-parser hands over from qm's stream, split anywhere", () => {
    // The stream as docs/api.md shows it; the comments reach onComment, the data onEvent.
    const wire =
      ": qm-status: waiting 2\n\n: qm-status: loading\n\n: qm-status: loading 42% eta 2s\n\n" +
      'data: {"id":"c1"}\n\n';
    for (let cut = 0; cut <= wire.length; cut++) {
      const seen: unknown[] = [];
      const parser = createParser({
        onEvent: (e) => seen.push(e.data),
        onComment: (c) => seen.push(parseWaitStatus(c)),
      });
      parser.feed(wire.slice(0, cut));
      parser.feed(wire.slice(cut));
      expect(seen).toEqual([
        { kind: "waiting", position: 2 },
        { kind: "loading", percent: null, etaS: null, elapsedS: null, stage: null },
        { kind: "loading", percent: 42, etaS: 2, elapsedS: null, stage: null },
        '{"id":"c1"}',
      ]);
    }
  });
});
