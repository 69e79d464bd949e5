/** Peers where people look: the model listings, and the metrics' peer series. */
import { describe, expect, test } from "bun:test";
import type { StatusJson } from "../../src/api/gateway.ts";
import { QmMetrics } from "../../src/api/metrics/prometheus.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { appOf, bodyOf, call } from "../support/in-process.ts";
import { completion } from "../support/openai-answers.ts";
import { peerGateway, refused } from "./support.ts";

const net = useFakeFetch("http://box2.test");

const TOML = `
[models.local]
cmd = "run-model --port \${PORT}"
check_endpoint = "none"

[peers.box2]
url = "http://box2.test"
models = ["big"]
`;

describe("peers in the listings", () => {
  test("/v1/models lists each peer model as PEER/MODEL, owned by its peer", async () => {
    const app = appOf(peerGateway(TOML));
    const body = await bodyOf(await call(app, "GET", "/v1/models"));
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(["local", "box2/big"]);
    expect(body.data[1]).toMatchObject({
      owned_by: "peer:box2",
      peer: "box2",
      status: { value: "offered" },
    });
    const anthropic = await bodyOf(
      await call(app, "GET", "/v1/models", null, { "anthropic-version": "2023-06-01" }),
    );
    expect(anthropic.data.map((m: { id: string }) => m.id)).toEqual(["local", "box2/big"]);
  });

  test("/v1/models/PEER/MODEL answers the peer model; an unknown one is a 404", async () => {
    const app = appOf(peerGateway(TOML));
    const one = await call(app, "GET", "/v1/models/box2/big");
    expect(await bodyOf(one)).toMatchObject({ id: "box2/big", owned_by: "peer:box2" });
    expect((await call(app, "GET", "/v1/models/box2/nope")).status).toBe(404);
  });

  test("/api/tags lists them too", async () => {
    const tags = await bodyOf(await call(appOf(peerGateway(TOML)), "GET", "/api/tags"));
    expect(tags.models.map((m: { name: string }) => m.name)).toEqual(["local", "box2/big"]);
  });

  test("the table's status: up, then down with its error and until when", async () => {
    const gw = peerGateway(TOML);
    expect(gw.peers.status()).toEqual([
      {
        name: "box2",
        url: "http://box2.test",
        kind: "openai",
        state: "up",
        models: [{ id: "big", state: "offered" }],
        inflight: 0,
        last_error: null,
        down_until_ms: null,
      },
    ]);
    net.answer = () => {
      throw refused();
    };
    const app = appOf(gw);
    await call(
      app,
      "POST",
      "/v1/chat/completions",
      JSON.stringify({ model: "big", messages: [] }),
      {
        "content-type": "application/json",
      },
    );
    const [s] = gw.peers.status();
    expect(s?.state).toBe("down");
    expect(s?.last_error).toContain("connection refused");
    expect(typeof s?.down_until_ms).toBe("number");
    expect(gw.changes.map((c) => c.state)).toEqual(["down"]);
  });
});

describe("peer metrics", () => {
  test("qm_peer_up from the status, qm_peer_requests_total from the records", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "x" }, "stop");
    await call(
      appOf(gw),
      "POST",
      "/v1/chat/completions",
      JSON.stringify({ model: "big", messages: [] }),
      { "content-type": "application/json" },
    );
    const status = { ...gw.status(), peers: gw.peers.status() } as StatusJson;
    const metrics = new QmMetrics({ status: () => status });
    for (const r of gw.records) metrics.request(r);
    const text = await metrics.text();
    expect(text).toContain('qm_peer_up{peer="box2"} 1');
    expect(text).toContain('qm_peer_requests_total{peer="box2",status="200"} 1');
  });
});
