/** The Ollama model routes in-process: version, tags, ps, show, the refused management routes. */
import { describe, expect, test } from "bun:test";
import { fakeGateway } from "../../support/fake-gateway.ts";
import { appOf, bodyOf, call, post } from "../../support/in-process.ts";

const TOML = `
[models.qwen3-8b]
cmd = "llama-server -m /models/Qwen3-8B-Q4_K_M.gguf --port \${PORT}"
check_endpoint = "none"
est_vram_gb = 2
ttl_s = 60
aliases = ["qwen"]

[models.hidden]
cmd = "run-model --port \${PORT}"
check_endpoint = "none"
unlisted = true
`;

describe("ollama model routes", () => {
  test("version and tags list the configured, listed models with best-effort details", async () => {
    const app = appOf(fakeGateway(TOML));
    expect(await bodyOf(await call(app, "GET", "/api/version"))).toEqual({ version: "0.13.5" });
    const tags = await bodyOf(await call(app, "GET", "/api/tags"));
    expect(tags.models).toHaveLength(1);
    const m = tags.models[0];
    expect(m).toMatchObject({ name: "qwen3-8b", model: "qwen3-8b", size: 2 * 1024 ** 3 });
    expect(m.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(m.details).toMatchObject({
      format: "gguf",
      family: "qwen",
      parameter_size: "8B",
      quantization_level: "Q4_K_M",
    });
    expect(Number.isNaN(Date.parse(m.modified_at))).toBe(false);
  });

  test("version is [ollama] version; a malformed one is refused where it is written", async () => {
    const app = appOf(fakeGateway(`[ollama]\nversion = "0.14.0-rc2"\n${TOML}`));
    expect(await bodyOf(await call(app, "GET", "/api/version"))).toEqual({ version: "0.14.0-rc2" });
    for (const bad of ['"latest"', '"0.13"', "13", '"0.13.5 "']) {
      expect(() => fakeGateway(`[ollama]\nversion = ${bad}\n${TOML}`)).toThrow(
        /2:\d+: ollama\.version: expected/,
      );
    }
  });

  test("ps lists resident models with size_vram and expires_at from the ttl", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    expect((await bodyOf(await call(app, "GET", "/api/ps"))).models).toEqual([]);
    gw.states["qwen3-8b"] = "ready";
    const ps = (await bodyOf(await call(app, "GET", "/api/ps"))).models;
    expect(ps).toHaveLength(1);
    expect(ps[0]).toMatchObject({ name: "qwen3-8b", size_vram: 2 * 1024 ** 3 });
    const left = Date.parse(ps[0].expires_at) - Date.now();
    expect(left).toBeGreaterThan(50_000);
    expect(left).toBeLessThanOrEqual(60_000);
  });

  test("show answers by name, alias or name:latest; unknown is 404 in Ollama's envelope", async () => {
    const app = appOf(fakeGateway(TOML));
    for (const model of ["qwen3-8b", "qwen", "qwen:latest"]) {
      const res = await post(app, "/api/show", { model });
      expect(res.status).toBe(200);
      expect((await bodyOf(res)).details.format).toBe("gguf");
    }
    const missing = await post(app, "/api/show", { model: "nope" });
    expect(missing.status).toBe(404);
    expect(await bodyOf(missing)).toEqual({ error: 'model "nope" not found' });
    const bad = await call(app, "POST", "/api/show", "{not json");
    expect(bad.status).toBe(400);
    expect(typeof (await bodyOf(bad)).error).toBe("string");
    const noName = await post(app, "/api/show", { model: 3 });
    expect(noName.status).toBe(400);
  });

  test("management routes refuse with a clear error; wrong methods are 405", async () => {
    const app = appOf(fakeGateway(TOML));
    for (const path of ["/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete"]) {
      const res = await post(app, path, { model: "x" });
      expect(res.status).toBe(403);
      expect((await bodyOf(res)).error).toContain("qm serves the models in its config");
    }
    const get = await call(app, "POST", "/api/tags");
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("GET");
    expect((await bodyOf(get)).error).toContain("use GET");
    // qm's own control routes keep their paths and envelope.
    expect((await call(app, "GET", "/api/status")).status).toBe(200);
  });
});
