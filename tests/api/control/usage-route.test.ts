/** `GET /api/usage`: per key × model × hour, an admin's any key, another key its own only. */
import { describe, expect, test } from "bun:test";
import { bodyOf } from "../../support/in-process.ts";
import { keyedQm, modelsToml } from "../edge/keyed.ts";

const CONFIG = `[server]\napi_keys = ["sk-root"]\n[keys.alice]\nkey = "sk-alice"\n[keys.bob]\nkey = "sk-bob"\n${modelsToml({ m: "" })}`;
const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };

describe("GET /api/usage", () => {
  test("rows and totals; an admin sees every key or the one asked for; another key its own", async () => {
    const q = keyedQm(CONFIG);
    await (await q.send("sk-alice", "POST", "/v1/chat/completions", chat)).text();
    await (await q.send("sk-bob", "POST", "/v1/chat/completions", chat)).text();
    await (await q.send("sk-bob", "POST", "/v1/chat/completions", chat)).text();
    const all = await bodyOf(await q.send("sk-root", "GET", "/api/usage"));
    expect(Object.keys(all.totals).sort()).toEqual(["alice", "bob"]);
    expect(all.totals.bob).toMatchObject({ requests: 2, prompt_tokens: 22, completion_tokens: 14 });
    expect(all.usage[0]).toMatchObject({ key: "alice", model: "m", requests: 1 });
    expect(all.usage[0].hour_ms % 3_600_000).toBe(0);
    const bobs = await bodyOf(await q.send("sk-root", "GET", "/api/usage?key=bob"));
    expect(Object.keys(bobs.totals)).toEqual(["bob"]);
    const own = await bodyOf(await q.send("sk-alice", "GET", "/api/usage"));
    expect(Object.keys(own.totals)).toEqual(["alice"]);
    expect((await q.send("sk-alice", "GET", "/api/usage?key=alice")).status).toBe(200);
    const other = await q.send("sk-alice", "GET", "/api/usage?key=bob");
    expect(other.status).toBe(403);
    expect((await bodyOf(other)).error).toMatchObject({ code: "forbidden", param: "key" });
  });

  test("since and until: epoch ms or ISO 8601; anything else is a 400 naming it", async () => {
    const q = keyedQm(CONFIG);
    await (await q.send("sk-alice", "POST", "/v1/chat/completions", chat)).text();
    const future = await bodyOf(
      await q.send("sk-root", "GET", `/api/usage?since=${Date.now() + 7_200_000}`),
    );
    expect(future.usage).toEqual([]);
    const iso = await bodyOf(
      await q.send("sk-root", "GET", "/api/usage?since=2000-01-01&until=2999-01-01T00:00:00Z"),
    );
    expect(iso.usage).toHaveLength(1);
    for (const bad of ["yesterday", "2024-13-45", "-1", "1e3"]) {
      const res = await q.send("sk-root", "GET", `/api/usage?since=${encodeURIComponent(bad)}`);
      expect({ bad, status: res.status, param: (await bodyOf(res)).error?.param }).toEqual({
        bad,
        status: 400,
        param: "since",
      });
    }
  });

  test("not kept (no activity log, no database): a 404 that says so", async () => {
    const q = keyedQm(`[activity]\nenabled = false\n${modelsToml({ m: "" })}`);
    const res = await q.send(null, "GET", "/api/usage");
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).error.message).toContain("usage is not kept");
  });
});
