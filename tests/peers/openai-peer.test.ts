/**
 * `kind = "openai"` peers in-process: requests for their models go through the same routes and
 * exchange as a local one, to the peer's URL with the peer's key, with no lease.
 */
import { describe, expect, test } from "bun:test";
import { jsonOf, useFakeFetch } from "../support/fake-fetch.ts";
import { appOf, bodyOf, post } from "../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../support/openai-answers.ts";
import { peerGateway, refused } from "./support.ts";

// One fake for every host: `sent.url` tells the boxes apart.
const net = useFakeFetch("http://");

const TOML = `
[server]
api_keys = ["client-key"]

[models.local]
cmd = "run-model --port \${PORT}"
proxy = "http://local.test"
check_endpoint = "none"

[peers.box2]
url = "http://box2.test"
api_key = "box2-key"
models = ["big", "local"]
timeout_s = 5

[peers.box3]
url = "http://box3.test"
models = ["big"]
`;

const auth = { authorization: "Bearer client-key" };
const hi = [{ role: "user", content: "hi" }];
const host = (url: string) => new URL(url).host;
const lastSent = () => {
  const sent = net.sent.at(-1);
  if (!sent) throw new Error("nothing was sent upstream");
  return sent;
};

describe("openai peers", () => {
  test("a peer's model goes to the peer with its key, never the client's, and takes no lease", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "hello" }, "stop");
    const res = await post(appOf(gw), "/v1/chat/completions", { model: "big", messages: hi }, auth);
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).choices[0].message.content).toBe("hello");
    expect(res.headers.get("x-qm-peer")).toBe("box2");
    const sent = lastSent();
    expect(sent.url).toBe("http://box2.test/v1/chat/completions");
    expect(sent.headers.get("authorization")).toBe("Bearer box2-key");
    expect(sent.headers.get("x-api-key")).toBe("box2-key");
    expect(sent.headers.get("x-qm-forwarded")).toBe("1");
    expect(jsonOf(sent).model).toBe("big");
    expect(gw.acquired).toBe(0);
    expect(gw.records.at(-1)).toMatchObject({ model: "big", peer: "box2", status: 200 });
    expect(gw.peers.status().find((p) => p.name === "box2")?.inflight).toBe(0);
  });

  test("a peer without a key gets no credentials at all", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "x" }, "stop");
    await post(appOf(gw), "/v1/chat/completions", { model: "box3/big", messages: hi }, auth);
    const sent = lastSent();
    expect(host(sent.url)).toBe("box3.test");
    expect(sent.headers.get("authorization")).toBeNull();
    expect(sent.headers.get("x-api-key")).toBeNull();
  });

  test("a stream is relayed chunk by chunk", async () => {
    const gw = peerGateway(TOML);
    net.answer = () =>
      sseResponse(sseText([chunk({ content: "he" }), chunk({ content: "llo" }, "stop")]));
    const res = await post(
      appOf(gw),
      "/v1/chat/completions",
      { model: "big", messages: hi, stream: true },
      auth,
    );
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const text = await res.text();
    expect(text).toContain('"he"');
    expect(text).toContain("[DONE]");
    expect(gw.acquired).toBe(0);
  });

  test("a local model of the same name wins; PEER/MODEL picks the peer", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "x" }, "stop");
    const app = appOf(gw);
    await post(app, "/v1/chat/completions", { model: "local", messages: hi }, auth);
    expect(host(lastSent().url)).toBe("local.test");
    expect(gw.acquired).toBe(1);
    const res = await post(
      app,
      "/v1/chat/completions",
      { model: "box2/local", messages: hi },
      auth,
    );
    expect(res.headers.get("x-qm-model")).toBe("box2/local");
    expect(host(lastSent().url)).toBe("box2.test");
    expect(jsonOf(lastSent()).model).toBe("local");
  });

  test("PEER/MODEL for a model the peer lacks is a 404 naming the peer", async () => {
    const gw = peerGateway(TOML);
    const res = await post(
      appOf(gw),
      "/v1/chat/completions",
      { model: "box3/local", messages: hi },
      auth,
    );
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).error.message).toContain('peer "box3" does not offer model "local"');
    expect(net.sent).toHaveLength(0);
  });

  test("a request another box forwarded is served locally or not at all: never sent on", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "x" }, "stop");
    const app = appOf(gw);
    const fwd = { ...auth, "x-qm-forwarded": "1" };
    const res = await post(app, "/v1/chat/completions", { model: "big", messages: hi }, fwd);
    expect(res.status).toBe(404);
    expect((await bodyOf(res)).error.message).toContain("not forwarded again");
    expect(net.sent).toHaveLength(0);
    const local = await post(app, "/v1/chat/completions", { model: "local", messages: hi }, fwd);
    expect(local.status).toBe(200);
  });

  test("hostile names: an empty, odd or over-long PEER/MODEL is a clear 404, nothing sent", async () => {
    const app = appOf(peerGateway(TOML));
    for (const model of ["box2/", "box2//big", `box2/${"x".repeat(10_000)}`, "/big", "box9/big"]) {
      const res = await post(app, "/v1/chat/completions", { model, messages: hi }, auth);
      expect({ model: model.slice(0, 20), status: res.status }).toEqual({
        model: model.slice(0, 20),
        status: 404,
      });
      expect((await bodyOf(res)).error.param).toBe("model");
    }
    expect(net.sent).toHaveLength(0);
  });

  test("refused: the peer is marked down and the next peer that offers the model answers", async () => {
    const gw = peerGateway(TOML);
    net.answer = (s) => {
      if (host(s.url) === "box2.test") throw refused();
      return completion({ content: "from box3" }, "stop");
    };
    const app = appOf(gw);
    const res = await post(app, "/v1/chat/completions", { model: "big", messages: hi }, auth);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-peer")).toBe("box3");
    expect(gw.peers.health("box2")).toBe("down");
    expect(gw.changes.map((c) => `${c.name}:${c.state}`)).toEqual(["box2:down"]);
    // While down it is not tried; once its backoff passes, one request probes it.
    net.sent.length = 0;
    await post(app, "/v1/chat/completions", { model: "big", messages: hi }, auth);
    expect(net.sent.map((s) => host(s.url))).toEqual(["box3.test"]);
    gw.timers.advance(1000);
    expect(gw.peers.health("box2")).toBe("probing");
    net.answer = () => completion({ content: "back" }, "stop");
    const back = await post(app, "/v1/chat/completions", { model: "big", messages: hi }, auth);
    expect(back.headers.get("x-qm-peer")).toBe("box2");
    expect(gw.peers.health("box2")).toBe("up");
  });

  test("a trial call whose client leaves gives the trial back: the next request probes", async () => {
    const gw = peerGateway(TOML);
    const app = appOf(gw);
    gw.peers.report("box2", { ok: false, error: "refused" });
    gw.timers.advance(1000);
    let reached: () => void = () => {};
    const atPeer = new Promise<void>((r) => {
      reached = r;
    });
    net.answer = () => {
      reached();
      return new Promise<Response>(() => {});
    };
    const client = new AbortController();
    const left = post(
      app,
      "/v1/chat/completions",
      { model: "box2/big", messages: hi },
      auth,
      client.signal,
    );
    await atPeer;
    client.abort();
    // The calls' sweep runs on the fake clock: it is what sees the client gone.
    gw.timers.advance(1);
    expect((await left).status).toBe(499);
    expect(gw.peers.health("box2")).toBe("probing");
    net.answer = () => completion({ content: "back" }, "stop");
    const res = await post(app, "/v1/chat/completions", { model: "box2/big", messages: hi }, auth);
    expect(res.status).toBe(200);
    expect(gw.peers.health("box2")).toBe("up");
  });

  test("a 5xx before any byte fails over; with no other box the error names the peer", async () => {
    const gw = peerGateway(TOML);
    net.answer = (s) =>
      host(s.url) === "box2.test"
        ? new Response("overloaded", { status: 503 })
        : completion({ content: "ok" }, "stop");
    const res = await post(appOf(gw), "/v1/chat/completions", { model: "big", messages: hi }, auth);
    expect(res.headers.get("x-qm-peer")).toBe("box3");
    expect(gw.peers.health("box2")).toBe("down");

    const only = peerGateway(TOML);
    net.answer = () => {
      throw refused();
    };
    const failed = await post(
      appOf(only),
      "/v1/chat/completions",
      { model: "box2/big", messages: hi },
      auth,
    );
    expect(failed.status).toBe(502);
    const message = (await bodyOf(failed)).error.message;
    expect(message).toContain('peer "box2"');
    expect(message).toContain("connection refused");
  });

  test("no first byte within timeout_s: a 504 naming the peer, on the injected clock", async () => {
    const gw = peerGateway(TOML);
    let reached: () => void = () => {};
    const atPeer = new Promise<void>((r) => {
      reached = r;
    });
    net.answer = () => {
      reached();
      return new Promise<Response>(() => {});
    };
    const pending = post(
      appOf(gw),
      "/v1/chat/completions",
      { model: "box2/big", messages: hi },
      auth,
    );
    await atPeer;
    gw.timers.advance(5000);
    const res = await pending;
    expect(res.status).toBe(504);
    expect((await bodyOf(res)).error.message).toContain('peer "box2"');
    expect(gw.peers.health("box2")).toBe("down");
  });
});
