/** `qm status` names who waits for what, by key. */
import { expect, test } from "bun:test";
import { renderStatus } from "../../src/cli/status-table.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";

test("each key's waiting requests, by model, under the queue line", () => {
  const s = fakeGateway(modelToml("a", { url: "http://127.0.0.1:9" })).status();
  s.queue.depth = 4;
  s.waiting = [
    { key: "ci", model: "embed", waited_ms: 900, position: 1 },
    { key: "alice", model: "qwen", waited_ms: 500, position: null },
    { key: "ci", model: "embed", waited_ms: 400, position: 2 },
    { key: "ci", model: "qwen", waited_ms: 100, position: 3 },
  ];
  const lines = renderStatus(s).split("\n");
  const at = lines.indexOf("queue: 4 waiting");
  expect(lines.slice(at, at + 3)).toEqual([
    "queue: 4 waiting",
    "  ci waits for embed (2), qwen (1)",
    "  alice waits for qwen (1)",
  ]);
  s.waiting = [];
  expect(renderStatus(s)).not.toContain("waits for");
});
