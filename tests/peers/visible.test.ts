/** Peers where people look: the model listings, and the metrics' peer series. */
import { describe, expect, test } from "bun:test";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import { peerHealth } from "../../src/runtime/peers.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { appOf, bodyOf, call, post } from "../support/in-process.ts";
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

describe("Ollama's /api/show and /api/ps for peer models", () => {
  const QM = `${TOML}
[peers.qm2]
url = "http://qm2.test"
kind = "qm"
`;
  function qmGateway() {
    const gw = peerGateway(QM);
    gw.peers.discovered(
      "qm2",
      new Map([
        ["coder", "ready"],
        ["chat", "offered"],
      ]),
      1,
    );
    gw.peers.discoveredAliases("qm2", new Map([["fast", "coder"]]));
    return gw;
  }

  test("show: bare, PEER/MODEL, an alias, :latest; it names the peer and asks nobody", async () => {
    const gw = qmGateway();
    const app = appOf(gw);
    const shown: Record<string, string> = {
      big: 'served by peer "box2" as "big"',
      "box2/big": 'served by peer "box2" as "big"',
      "big:latest": 'served by peer "box2" as "big"',
      "qm2/coder": 'served by peer "qm2" as "coder"',
      fast: 'served by peer "qm2" as "fast"',
    };
    for (const [model, says] of Object.entries(shown)) {
      const res = await post(app, "/api/show", { model });
      expect(res.status).toBe(200);
      const body = await bodyOf(res);
      expect(body.modelfile).toContain(says);
      expect(body.modelfile).not.toContain("cmd:");
      expect(body.capabilities).toEqual(["completion", "tools"]);
    }
    expect(net.sent).toHaveLength(0);
  });

  test("show: a peer that lacks the model, or a slash that names nobody, is Ollama's 404", async () => {
    const app = appOf(qmGateway());
    for (const model of ["box2/nope", "qm2/", "nobody/big", "box2/big/x", "x".repeat(5000)]) {
      const res = await post(app, "/api/show", { model });
      expect(res.status).toBe(404);
      expect(await bodyOf(res)).toEqual({ error: `model "${model}" not found` });
    }
  });

  test("show still answers for a peer that is down (from the table)", async () => {
    const gw = qmGateway();
    gw.peers.report("box2", { ok: false, error: "refused" });
    expect(gw.peers.health("box2")).toBe("down");
    const res = await post(appOf(gw), "/api/show", { model: "box2/big" });
    expect(res.status).toBe(200);
  });

  test("ps lists a peer's loaded models as PEER/MODEL while the peer is up", async () => {
    const gw = qmGateway();
    const app = appOf(gw);
    const ps = (await bodyOf(await call(app, "GET", "/api/ps"))).models;
    // box2's `big` is only offered, qm2's `chat` too: only `coder` is loaded.
    expect(ps.map((m: { name: string }) => m.name)).toEqual(["qm2/coder"]);
    expect(ps[0]).toMatchObject({
      model: "qm2/coder",
      size_vram: 0,
      expires_at: "2318-01-01T00:00:00Z",
    });
    gw.peers.report("qm2", { ok: false, error: "refused" });
    expect((await bodyOf(await call(app, "GET", "/api/ps"))).models).toEqual([]);
  });
});

describe("peer metrics", () => {
  test("qm_peer_up from the peers' health, qm_peer_requests_total from the records", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "x" }, "stop");
    await call(
      appOf(gw),
      "POST",
      "/v1/chat/completions",
      JSON.stringify({ model: "big", messages: [] }),
      { "content-type": "application/json" },
    );
    const peers = peerHealth(gw.peers);
    const metrics = new QmMetrics({ gauges: () => ({ ...gw.gauges(), peers }) });
    for (const r of gw.records) metrics.request(r);
    const text = await metrics.text();
    expect(text).toContain('qm_peer_up{peer="box2"} 1');
    expect(text).toContain('qm_peer_requests_total{peer="box2",status="200"} 1');
  });
});
