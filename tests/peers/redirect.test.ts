/**
 * A peer's redirect on the request path: never passed on to the client (who would follow it
 * to another host) and never followed here — a 502 in the client's API's envelope naming the
 * peer, the peer marked down, a bare name failing over to the next peer. And names past
 * Latin-1 from a peer (`模型`): dropped from its list, so a request for one is an enveloped
 * 404 on every API, never a 500 outside the envelope.
 */
import { describe, expect, test } from "bun:test";
import { fromQmStatus } from "../../src/peers/discover.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { appOf, type Body, bodyOf, post } from "../support/in-process.ts";
import { completion } from "../support/openai-answers.ts";
import { peerGateway } from "./support.ts";

const net = useFakeFetch("http://");

const TOML = `
[peers.box2]
url = "http://box2.test"
api_key = "k2"
models = ["big"]

[peers.box3]
url = "http://box3.test"
models = ["big"]
`;
const hi = [{ role: "user", content: "hi" }];
const redirect = () =>
  new Response(null, { status: 307, headers: { location: "http://elsewhere.test/steal" } });

describe("a peer's redirect", () => {
  test.each([
    ["/v1/chat/completions", { model: "box2/big", messages: hi }, (b: Body) => b.error.message],
    [
      "/v1/messages",
      { model: "box2/big", max_tokens: 9, messages: hi },
      (b: Body) => b.error.message,
    ],
    ["/api/chat", { model: "box2/big", messages: hi, stream: false }, (b: Body) => b.error],
  ])("%s: a 502 in the API's envelope naming the peer, no Location", async (path, body, message) => {
    const gw = peerGateway(TOML);
    net.answer = redirect;
    const res = await post(appOf(gw), path, body);
    expect(res.status).toBe(502);
    expect(res.headers.get("location")).toBeNull();
    const text = message(await bodyOf(res));
    expect(text).toContain('peer "box2" answered 307, a redirect');
    expect(net.sent.map((s) => new URL(s.url).host)).toEqual(["box2.test"]);
    expect(gw.peers.status().find((p) => p.name === "box2")?.state).toBe("down");
  });

  test("a bare name fails over to the next peer; the redirect is never followed", async () => {
    const gw = peerGateway(TOML);
    net.answer = (s) =>
      new URL(s.url).host === "box2.test" ? redirect() : completion({ content: "ok" }, "stop");
    const res = await post(appOf(gw), "/v1/chat/completions", { model: "big", messages: hi });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-peer")).toBe("box3");
    expect(net.sent.map((s) => new URL(s.url).host)).toEqual(["box2.test", "box3.test"]);
  });
});

describe("names past Latin-1 from a peer", () => {
  test("dropped from its list alone; the others are kept", () => {
    const found = fromQmStatus({
      models: [
        { id: "模型", state: "ready", aliases: ["ok-alias", "别名"] },
        { id: "fine", state: "ready", aliases: ["模型2", "fine-alias"] },
      ],
    })!;
    expect([...found.models.keys()]).toEqual(["fine"]);
    expect([...found.aliases]).toEqual([["fine-alias", "fine"]]);
    expect(found.dropped).toMatchObject({ invalid: 1, overCap: 0 });
    expect(found.dropped.example).toContain("U+6A21");
  });

  test.each([
    ["/v1/chat/completions", { model: "box2/模型", messages: hi }],
    ["/v1/messages", { model: "模型", max_tokens: 9, messages: hi }],
    ["/api/chat", { model: "模型", messages: hi, stream: false }],
  ])("%s for such a name: an enveloped 404, nothing sent", async (path, body) => {
    const gw = peerGateway(TOML);
    gw.peers.discovered(
      "box2",
      fromQmStatus({ models: [{ id: "模型", state: "ready" }] })!.models,
      1,
    );
    const res = await post(appOf(gw), path, body);
    expect(res.status).toBe(404);
    const b = await bodyOf(res);
    expect(typeof (b.error?.message ?? b.error)).toBe("string");
    expect(net.sent).toEqual([]);
  });
});
