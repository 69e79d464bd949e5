/**
 * llama-swap's `/logs`, `/logs/stream` and `/unload` in-process, over a fake Gateway: the same
 * answers a llama-swap script expects, behind the API key like every control route.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { buildApp } from "../../../src/api/app.ts";
import { QmError } from "../../../src/shared/errors.ts";
import { createLogger, LogFeed, type Logger } from "../../../src/shared/log.ts";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, bodyOf, call } from "../../support/in-process.ts";

const up = useFakeFetch();
const at = new Date("2026-12-01T00:00:00.000Z");
let gw: FakeGw;
let log: Logger;
let app: App;

function setUp(server = '[server]\nlog_level = "error"\n') {
  gw = fakeGateway(server + modelToml("a", up) + modelToml("b", up));
  log = createLogger(
    "info",
    () => {},
    () => at,
    new LogFeed(),
  );
  app = buildApp(gw, { loopback: true, log });
}
beforeEach(() => setUp());

const get = (path: string, headers: Record<string, string> = {}) =>
  call(app, "GET", path, undefined, headers);

/** Reads a chunked body until `want` lines came (or it ends), then lets go of it. */
async function lines(res: Response, want: number, during?: () => void): Promise<string[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let acted = false;
  while (text.split("\n").length - 1 < want) {
    if (!acted && during && text.split("\n").length - 1 >= want - 2) {
      acted = true;
      during();
    }
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text.split("\n").filter(Boolean);
}

describe("GET /logs", () => {
  test("qm's recent lines, then each model's output with its id in front", async () => {
    log.info("qm started");
    gw.emitLine("a", "a loaded");
    gw.emitLine("b", "b says hi");
    const res = await get("/logs");
    expect([res.status, res.headers.get("content-type")]).toEqual([
      200,
      "text/plain; charset=utf-8",
    ]);
    expect(await res.text()).toBe(
      "2026-12-01T00:00:00.000Z INFO  qm started\n[a] a loaded\n[b] b says hi\n",
    );
  });

  test("a browser is sent to the dashboard", async () => {
    const res = await get("/logs", { accept: "text/html,application/xhtml+xml" });
    expect([res.status, res.headers.get("location")]).toEqual([302, "/ui/"]);
  });
});

describe("GET /logs/stream", () => {
  test("the history, then each new line of qm and of every model as it comes", async () => {
    log.info("before");
    gw.emitLine("a", "old a");
    const res = await get("/logs/stream");
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const got = await lines(res, 4, () => {
      gw.emitLine("b", "new b");
      log.warn("after");
    });
    expect(got).toEqual([
      "2026-12-01T00:00:00.000Z INFO  before",
      "[a] old a",
      "[b] new b",
      "2026-12-01T00:00:00.000Z WARN  after",
    ]);
    // The client left: nothing follows the logs any more.
    expect([...gw.logFollowers.values()].every((s) => s.size === 0)).toBe(true);
  });

  test("/proxy is qm's own lines, /upstream the models'; ?no-history starts from now", async () => {
    log.info("own");
    gw.emitLine("a", "model line");
    expect(await lines(await get("/logs/stream/proxy"), 1)).toEqual([
      "2026-12-01T00:00:00.000Z INFO  own",
    ]);
    expect(await lines(await get("/logs/stream/upstream"), 1)).toEqual(["[a] model line"]);
    const fresh = await get("/logs/stream/upstream?no-history");
    expect(await lines(fresh, 1, () => gw.emitLine("a", "newer"))).toEqual(["[a] newer"]);
  });

  test("another log name is a 400 in the OpenAI envelope", async () => {
    const res = await get("/logs/stream/nope");
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).error.message).toBe(
      'no log "nope": use /logs/stream/proxy or /logs/stream/upstream',
    );
  });
});

describe("GET /unload", () => {
  test("unloads every model and says OK; a refusal is the API's error", async () => {
    const res = await get("/unload");
    expect([res.status, await res.text()]).toEqual([200, "OK"]);
    expect(gw.unloads).toEqual(["all"]);
    gw.unloadError = new QmError("conflict", "cannot unload: leased (l1)");
    const refused = await get("/unload");
    expect(refused.status).toBe(409);
    expect((await bodyOf(refused)).error.message).toBe("cannot unload: leased (l1)");
  });

  test("other methods are a 405 naming GET", async () => {
    const res = await call(app, "POST", "/unload", "{}");
    expect([res.status, res.headers.get("allow")]).toEqual([405, "GET"]);
  });
});

describe("behind the API key", () => {
  test("each route needs the key when server.api_keys is set", async () => {
    setUp('[server]\nlog_level = "error"\napi_keys = ["sk-1"]\n');
    for (const path of ["/logs", "/logs/stream", "/logs/stream/proxy", "/unload"]) {
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 401 });
    }
    expect(gw.unloads).toEqual([]);
    const ok = await get("/unload", { authorization: "Bearer sk-1" });
    expect([ok.status, gw.unloads]).toEqual([200, ["all"]]);
  });
});
