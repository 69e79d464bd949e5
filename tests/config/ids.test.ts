/**
 * Names that travel in HTTP headers (a model's id in `X-QM-Model`, a peer's name in
 * `X-QM-Peer`) must be Latin-1 without controls: others are refused at their line and column,
 * never left to fail every request later. Aliases may hold any character. And
 * `metrics_on_api` takes `true`, `false` or `"open"`, from the file or the environment.
 */
import { describe, expect, test } from "bun:test";
import { headerProblem, peerIdProblem } from "../../src/config/ids.ts";
import { errors, load } from "./support.ts";

const model = (id: string) => `[models.${JSON.stringify(id)}]\ncmd = "server --port \${PORT}"\n`;

describe("names an HTTP header cannot carry", () => {
  test("a model id past Latin-1 is refused at its file:line:col, naming the character", () => {
    const got = errors(`${model("ok")}\n${model("模型")}`);
    expect(got).toHaveLength(1);
    expect(got[0]).toStartWith('quartermaster.toml:4:1: models."模型": model id "模型" has "模"');
    expect(got[0]).toContain("U+6A21");
    expect(got[0]).toContain("aliases");
  });

  test("a control character in a model id is refused; Latin-1 (é) is accepted", () => {
    expect(errors(model("a\u0007b"))[0]).toContain("control character (U+0007)");
    expect(errors(model("a\u0085b"))[0]).toContain("control character (U+0085)");
    expect(Object.keys(load(model("café")).models)).toEqual(["café"]);
  });

  test("an alias may hold any character: it resolves to an id that travels instead", () => {
    const c = load(`[models.chat]\ncmd = "server --port \${PORT}"\naliases = ["模型"]\n`);
    expect(c.aliases).toEqual({ 模型: "chat" });
  });

  test("a peer's name, and the models a peer's config names, are checked the same way", () => {
    const peer = (name: string, models: string) =>
      `[peers.${JSON.stringify(name)}]\nurl = "http://b.test"\nkind = "openai"\nmodels = ${models}\n`;
    expect(errors(peer("盒", '["m"]'))[0]).toStartWith(
      'quartermaster.toml:1:1: peers."盒": peer name',
    );
    const listed = errors(peer("b", '["m", "模型"]'));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toStartWith('quartermaster.toml:4:16: peers.b.models[1]: model "模型" has');
    const node = `[peers.n]\nurl = "http://n.test"\nkind = "mistralrs"\npinned = ["模"]\n`;
    expect(errors(node)[0]).toContain('peers.n.pinned[0]: model "模" has');
  });

  test("the rules as functions: a peer's ids are also bounded in length and not empty", () => {
    expect(headerProblem("qwen2.5-7b:latest")).toBeNull();
    expect(headerProblem("ü")).toBeNull();
    expect(peerIdProblem("")).toBe("is empty");
    expect(peerIdProblem("x".repeat(256))).toBeNull();
    expect(peerIdProblem("x".repeat(257))).toBe("is longer than 256 characters");
    expect(peerIdProblem("a\u0000b")).toContain("U+0000");
    expect(peerIdProblem("😀")).toContain("U+1F600");
  });
});

describe("metrics_on_api", () => {
  const withKey = (line: string) => `[server]\nlisten = ["127.0.0.1:8080"]\n${line}\n${model("m")}`;
  const base = withKey("");
  test('false by default; true or "open" from the file', () => {
    expect(load(base).server.metricsOnApi).toBe(false);
    expect(load(withKey("metrics_on_api = true")).server.metricsOnApi).toBe(true);
    expect(load(withKey('metrics_on_api = "open"')).server.metricsOnApi).toBe("open");
  });

  test("QM_SERVER__METRICS_ON_API reads open, true and false; anything else is refused", () => {
    const env = (v: string) => load(base, { env: { QM_SERVER__METRICS_ON_API: v } });
    expect(env("open").server.metricsOnApi).toBe("open");
    expect(env("true").server.metricsOnApi).toBe(true);
    expect(env("0").server.metricsOnApi).toBe(false);
    const bad = errors(base, { env: { QM_SERVER__METRICS_ON_API: "closed" } });
    expect(bad).toHaveLength(1);
    expect(bad[0]).toContain("QM_SERVER__METRICS_ON_API");
  });

  test('a file value other than a boolean or "open" is refused at its line', () => {
    const bad = errors(withKey('metrics_on_api = "yes"'));
    expect(bad).toEqual([
      'quartermaster.toml:3:1: server.metrics_on_api: expected true or false or "open", got "yes"',
    ]);
  });
});
