/**
 * The dashboard keeps its own copy of the wire types (src/ui/app/wire.ts compiles for browsers,
 * without Bun's types). These assignments make `bun run typecheck` fail when the server's
 * status or request record no longer fits what the page reads.
 */
import { describe, expect, test } from "bun:test";
import type { ModelStatusJson, StatusJson } from "../../src/api/status-json.ts";
import type { HistoryJson } from "../../src/gpu/history.ts";
import type { RequestRecord as ServerRecord } from "../../src/observe/record.ts";
import type { ModelState as ServerState } from "../../src/scheduler/types.ts";
import type {
  History,
  ModelState,
  ModelStatus,
  RequestRecord,
  Status,
} from "../../src/ui/app/wire.ts";
import { fakeGateway } from "../support/fake-gateway.ts";

const status = (s: StatusJson): Status => s;
const modelStatus = (m: ModelStatusJson): ModelStatus => m;
const record = (r: ServerRecord): RequestRecord => r;
const history = (h: HistoryJson): History => h;
// Both ways: a state the server adds must be one the page knows (it has a badge for each).
const state = (s: ServerState): ModelState => s;
const serverState = (s: ModelState): ServerState => s;

describe("the dashboard's wire types", () => {
  test("fit what the server sends", () => {
    const gw = fakeGateway(`[models.m]\ncmd = "run m"\nproxy = "http://127.0.0.1:9"\n`);
    const s = status(gw.status());
    expect(modelStatus(gw.status().models[0]!).id).toBe("m");
    expect(state(serverState(s.models[0]!.state))).toBe("stopped");
    expect(typeof record).toBe("function");
    expect(history({ memory: [], residency: [], swaps: [] }).memory).toEqual([]);
  });
});
