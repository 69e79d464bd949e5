/**
 * Who may read `/metrics`. `metrics_on_api = "open"` serves it on the API listeners without a
 * key — exactly GET/HEAD `/metrics`, nothing near it — as an endpoint picker scrapes it; the
 * Host check still applies there. The metrics listener answers only the Host names
 * `allowed_hosts` admits (a loopback listener: loopback names), so a DNS-rebinding page reads
 * no model ids or counters.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { metricsHandler } from "../../../src/api/control/observe-routes.ts";
import { serveMetrics } from "../../../src/runtime/serve.ts";
import { silentLogger } from "../../../src/shared/log.ts";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, bodyOf, call } from "../../support/in-process.ts";
import { rawRequest } from "../../support/raw-http.ts";

const up = useFakeFetch();
const toml = (server: string) => `[server]\nlog_level = "error"\n${server}\n${modelToml("m", up)}`;

describe('metrics_on_api = "open"', () => {
  const app = () => appOf(fakeGateway(toml('metrics_on_api = "open"\napi_keys = ["k"]')));

  test("GET and HEAD /metrics need no key; the text is qm's metrics", async () => {
    const a = app();
    const res = await call(a, "GET", "/metrics");
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("# TYPE qm_model_state gauge");
    expect((await call(a, "HEAD", "/metrics")).status).toBe(200);
  });

  test("only that path and those methods: everything else still needs the key", async () => {
    const a = app();
    for (const [method, path] of [
      ["POST", "/metrics"],
      ["GET", "/metrics/"],
      ["GET", "/METRICS"],
      ["GET", "/metrics/x"],
      ["GET", "/api/status"],
      ["GET", "/v1/models"],
      ["GET", "/api/requests"],
    ] as const) {
      const res = await call(a, method, path);
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 401 });
    }
  });

  test("the Host check still applies to the open path", async () => {
    const res = await call(app(), "GET", "/metrics", null, { host: "evil.example" });
    expect(res.status).toBe(403);
    expect((await bodyOf(res)).error.message).toContain('Host "evil.example"');
  });

  test("true keeps /metrics behind the key", async () => {
    const a = appOf(fakeGateway(toml('metrics_on_api = true\napi_keys = ["k"]')));
    expect((await call(a, "GET", "/metrics")).status).toBe(401);
  });
});

describe("the metrics listener's Host check", () => {
  let stop: (() => void) | null = null;
  afterEach(() => {
    stop?.();
    stop = null;
  });

  /** A raw GET /metrics with exactly this Host header. */
  async function withHost(port: number, host: string): Promise<{ status: number; body: string }> {
    const raw = await rawRequest(
      port,
      `GET /metrics HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      { timeoutMs: 5000 },
    );
    return { status: raw.status, body: raw.body };
  }

  test("a loopback listener with no allowed_hosts answers loopback names only", async () => {
    const gw = fakeGateway(toml(""));
    const server = serveMetrics(gw, "127.0.0.1", 0, silentLogger);
    stop = () => void server.stop(true);
    const port = server.port!;
    expect((await withHost(port, `127.0.0.1:${port}`)).status).toBe(200);
    expect((await withHost(port, `localhost:${port}`)).status).toBe(200);
    const rebound = await withHost(port, `attacker.example:${port}`);
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.message).toContain("server.allowed_hosts");
    expect(rebound.body).not.toContain("qm_");
  });

  test("allowed_hosts: listed names and wildcards pass, others get 403 in the OpenAI envelope", async () => {
    const handle = metricsHandler(fakeGateway(toml("")), silentLogger, {
      allowedHosts: ["prom.internal", "*.svc"],
      loopback: false,
    });
    const get = (host: string) =>
      handle(new Request(`http://${host}/metrics`, { headers: { host } }));
    expect((await get("prom.internal:9090")).status).toBe(200);
    expect((await get("qm.ns.svc")).status).toBe(200);
    const refused = await get("other.example");
    expect(refused.status).toBe(403);
    expect((await bodyOf(refused)).error.code).toBe("forbidden");
    // Without a list, a listener on a routable address answers any name (as the API does).
    const open = metricsHandler(fakeGateway(toml("")), silentLogger, {
      allowedHosts: [],
      loopback: false,
    });
    const any = await open(new Request("http://x/metrics", { headers: { host: "any.example" } }));
    expect(any.status).toBe(200);
  });
});
