/** `qm status`'s table, and `qm status --watch` through the compiled binary against a stand-in. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { ModelStatusJson, StatusJson } from "../../src/api/status-json.ts";
import { renderStatus } from "../../src/cli/status-table.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

/** A status as the gateway answers it, one model per entry, each with the fields given. */
function status(models: (Partial<ModelStatusJson> & { id: string })[]): StatusJson {
  const toml = models.map((m) => modelToml(`"${m.id}"`, { url: "http://127.0.0.1:9" })).join("");
  const base = fakeGateway(toml).status();
  return { ...base, models: base.models.map((m, i) => ({ ...m, ...models[i] })) };
}

/** One model's entry (for `status`). */
const model = (id: string, extra: Partial<ModelStatusJson> = {}) => ({ id, ...extra });

test("the table shows a load's progress, or what was prefetched, in the state column", () => {
  const text = renderStatus(
    status([
      model("a", {
        state: "starting",
        load: { elapsed_ms: 4200, expected_ms: 10_000, progress: 0.42, stage: null },
      }),
      model("b", {
        state: "starting",
        load: { elapsed_ms: 3400, expected_ms: null, progress: null, stage: null },
      }),
      model("c", { state: "ready" }),
      model("d", { state: "stopped", prefetched: 0.634 }),
      model("e", { state: "failed", prefetched: 1 }),
    ]),
  );
  const rows = text
    .split("\n")
    .slice(1, 6)
    .map((l) => l.split(/\s{2,}/).slice(0, 2));
  expect(rows).toEqual([
    ["a", "starting 42%"],
    ["b", "starting 3s"],
    ["c", "ready"],
    ["d", "stopped prefetched 63%"],
    ["e", "failed prefetched 100%"],
  ]);
});

test("a model a reload changed says its restart is pending", () => {
  const text = renderStatus(
    status([model("a", { state: "ready", restart_pending: true }), model("b")]),
  );
  expect(text).toContain("a: restart pending");
  expect(text).not.toContain("b: restart pending");
});

test("several GPUs: a line per card; preload: what is loading, done and skipped, and why", () => {
  const s = status([model("a", { state: "ready", gpus: [1] })]);
  s.resources.gpus = [
    { index: 0, budget_gb: 24, ceiling_gb: 23, used_gb: 0, models: [], reading: null },
    {
      index: 1,
      budget_gb: 24,
      ceiling_gb: 23,
      used_gb: 8,
      models: ["a"],
      reading: { total_gb: 24, used_gb: 8.5, free_gb: 15.5, ours_gb: 8, foreign_gb: 0.5 },
    },
  ];
  s.preload = {
    pending: ["c"],
    loading: "b",
    done: ["a"],
    skipped: [{ model: "d", reason: "it does not fit" }],
  };
  const text = renderStatus(s);
  expect(text).toContain(
    "gpu 0: 0 GB estimated in use of a 23 GB ceiling (budget 24 GB) — no model\n",
  );
  expect(text).toContain(
    "gpu 1: 8 GB estimated in use of a 23 GB ceiling (budget 24 GB) — a; reads 8.5 of 24 GB used (qm 8 GB, others 0.5 GB)",
  );
  expect(text).toContain(
    "preload: loading b; pending c; done a; skipped d\n  d skipped: it does not fit",
  );
});

const first = status([model("m")]);
const later = status([model("m", { state: "ready" })]);
let events: ReadableStreamDefaultController<Uint8Array> | null = null;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/api/status") {
      // The redraw the event asked for is under way: now the server "goes away".
      events?.close();
      return Response.json(later);
    }
    if (path !== "/api/events") return new Response("no", { status: 404 });
    const frames = [
      `id: 1\nevent: status\ndata: ${JSON.stringify(first)}\n\n`,
      'id: 2\nevent: model\ndata: {"type":"model","model":"m","state":"ready"}\n\n',
    ];
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const f of frames) c.enqueue(new TextEncoder().encode(f));
        events = c;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  },
});
afterAll(() => server.stop(true));

test("--watch: the snapshot, then a redraw after each change; the end of the stream is exit 1", async () => {
  const proc = Bun.spawn([QM, "status", "--watch", "--json", "--url", server.url.href], {
    cwd: ROOT,
    env: { ...process.env, QM_CONFIG: "", QM_API_KEY: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(proc.stdout).text();
  const err = await new Response(proc.stderr).text();
  expect(await proc.exited).toBe(1);
  const drawn = out
    .split("\n\n")
    .filter((l) => l.trim() !== "")
    .map((l) => (JSON.parse(l) as StatusJson).models[0]?.state);
  expect(drawn).toEqual(["stopped", "ready"]);
  expect(err).toBe(
    `qm: the server at ${server.url.href.replace(/\/$/, "")} closed the event stream\n`,
  );
});
