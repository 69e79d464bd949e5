/** `qm status`: the fleet table under the models, when the config has peers. */
import { expect, test } from "bun:test";
import { renderStatus } from "../../src/cli/status-table.ts";
import { fakeGateway } from "../support/fake-gateway.ts";

test("one row per peer: kind, state (and for how long down), models (* ready), url; its error", () => {
  const base = fakeGateway("").status();
  const now = Date.now();
  const text = renderStatus({
    ...base,
    peers: [
      {
        name: "box2",
        url: "http://10.0.0.2:8080",
        kind: "qm",
        state: "up",
        models: [
          { id: "llama-70b", state: "ready" },
          { id: "qwen", state: "offered" },
        ],
        inflight: 2,
        last_error: 'peer "box2": connection reset',
        down_until_ms: null,
      },
      {
        name: "cloud",
        url: "http://10.0.0.3:8000",
        kind: "openai",
        state: "down",
        models: [{ id: "big", state: "offered" }],
        inflight: 0,
        last_error: 'peer "cloud": model "big" failed to answer: connection refused',
        down_until_ms: now + 3900,
      },
    ],
  });
  const lines = text.split("\n");
  const head = lines.findIndex((l) => l.startsWith("PEER"));
  expect(lines[head]).toMatch(/^PEER\s+KIND\s+STATE\s+INFLIGHT\s+MODELS\s+URL$/);
  expect(lines[head + 1]).toMatch(
    /^box2\s+qm\s+up\s+2\s+llama-70b\*,qwen\s+http:\/\/10\.0\.0\.2:8080$/,
  );
  expect(lines[head + 2]).toMatch(
    /^cloud\s+openai\s+down 4s\s+0\s+big\s+http:\/\/10\.0\.0\.3:8000$/,
  );
  expect(text).toContain('cloud: peer "cloud": model "big" failed to answer: connection refused');
  // A peer that is up again: its last error is told as past.
  expect(text).toContain('box2 (up again; last error): peer "box2": connection reset');
  // Without peers, no fleet table.
  expect(renderStatus(base)).not.toContain("PEER");
});
