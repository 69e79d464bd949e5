/**
 * `GET /ready` in-process: 200 `{"ready": true}` while qm can take traffic, 503 with a reason
 * once shutdown began; never cached; HEAD as GET; open without an API key like `/health`, and
 * only those two exact paths are.
 */
import { describe, expect, test } from "bun:test";
import { buildApp } from "../../src/api/app.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { appOf, bodyOf, call, quietLog } from "../support/in-process.ts";

const up = useFakeFetch();

describe("/ready", () => {
  test("200 {ready: true} while serving, not to be cached", async () => {
    const app = appOf(fakeGateway(modelToml("m", up)));
    const res = await call(app, "GET", "/ready");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await bodyOf(res)).toEqual({ ready: true });
  });

  test("503 {ready: false, reason} once shutdown begins", async () => {
    const gw = fakeGateway(modelToml("m", up));
    const app = appOf(gw);
    expect((await call(app, "GET", "/ready")).status).toBe(200);
    gw.shuttingDown = true;
    const res = await call(app, "GET", "/ready");
    expect(res.status).toBe(503);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await bodyOf(res)).toEqual({ ready: false, reason: "qm is shutting down" });
  });

  test("HEAD answers the GET's status and headers without a body", async () => {
    const gw = fakeGateway(modelToml("m", up));
    const app = appOf(gw);
    const head = await call(app, "HEAD", "/ready");
    expect([head.status, head.headers.get("cache-control"), await head.text()]).toEqual([
      200,
      "no-store",
      "",
    ]);
    gw.shuttingDown = true;
    const down = await call(app, "HEAD", "/ready");
    expect([down.status, await down.text()]).toEqual([503, ""]);
  });

  test("another method is a 405 naming GET, in the OpenAI envelope", async () => {
    const app = appOf(fakeGateway(modelToml("m", up)));
    for (const method of ["POST", "PUT", "DELETE"]) {
      const res = await call(app, method, "/ready", method === "DELETE" ? undefined : "{}");
      expect([res.status, res.headers.get("allow")]).toEqual([405, "GET"]);
      expect((await bodyOf(res)).error.code).toBe("method_not_allowed");
    }
  });
});

describe("the paths open without an API key", () => {
  const keyed = () => appOf(fakeGateway(`[server]\napi_keys = ["k"]\n${modelToml("m", up)}`));

  test("/ready and /health answer a probe that sends no key", async () => {
    const app = keyed();
    const ready = await call(app, "GET", "/ready");
    expect([ready.status, await bodyOf(ready)]).toEqual([200, { ready: true }]);
    expect((await call(app, "GET", "/health")).status).toBe(200);
    expect((await call(app, "HEAD", "/ready")).status).toBe(200);
    // A query string is no other path.
    expect((await call(app, "GET", "/ready?verbose=1")).status).toBe(200);
  });

  test("only those exact paths: neighbours and keyed routes still need the key", async () => {
    const app = keyed();
    for (const path of [
      "/ready/",
      "/readyz",
      "/ready/x",
      "/READY",
      "/ready.json",
      "/health/ready",
      "/api/status",
      "/v1/models",
    ]) {
      const res = await call(app, "GET", path);
      expect([path, res.status]).toEqual([path, 401]);
      expect((await bodyOf(res)).error.code).toBe("unauthorized");
    }
    const authed = await call(app, "GET", "/api/status", null, { authorization: "Bearer k" });
    expect(authed.status).toBe(200);
  });

  test("the Host check still applies to /ready (allowed_hosts on a non-loopback listener)", async () => {
    const gw = fakeGateway(
      `[server]\napi_keys = ["k"]\nallowed_hosts = ["qm.internal"]\n${modelToml("m", up)}`,
    );
    const app = buildApp(gw, { loopback: false, log: quietLog() });
    const at = (host: string) => app.handle(new Request("http://x/ready", { headers: { host } }));
    expect((await at("qm.internal:8080")).status).toBe(200);
    const foreign = await at("10.1.2.3:8080");
    expect(foreign.status).toBe(403);
    expect((await bodyOf(foreign)).error.message).toContain("server.allowed_hosts");
  });
});
