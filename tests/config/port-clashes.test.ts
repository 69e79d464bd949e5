// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${PORT} is qm's macro, literal text here
/**
 * `qm config check` finds every port clash before anything binds: overlapping listeners,
 * a model on a listener's port, two models on one fixed port that may run together.
 * Ports here are only written in configs (nothing binds them), so fixed numbers are safe.
 */
import { describe, expect, test } from "bun:test";
import { hostsOverlap } from "../../src/config/port-clashes.ts";
import { errors, load } from "./support.ts";

describe("hostsOverlap", () => {
  test("wildcards cover their family; names and loopbacks by address", () => {
    const cases: [string, string, boolean][] = [
      ["127.0.0.1", "127.0.0.1", true],
      ["127.0.0.1", "0.0.0.0", true],
      ["0.0.0.0", "10.0.0.2", true],
      ["0.0.0.0", "::1", false],
      ["::", "127.0.0.1", true],
      ["::", "::1", true],
      ["localhost", "127.0.0.1", true],
      ["localhost", "::1", true],
      ["0.0.0.0", "localhost", true],
      ["0.0.0.0", "box.lan", true],
      ["127.0.0.1", "10.0.0.2", false],
      ["127.0.0.1", "::1", false],
      ["127.0.0.1", "127.0.0.2", false],
    ];
    for (const [a, b, want] of cases) {
      expect({ a, b, got: hostsOverlap(a, b) }).toEqual({ a, b, got: want });
      expect({ a: b, b: a, got: hostsOverlap(b, a) }).toEqual({ a: b, b: a, got: want });
    }
  });
});

describe("listeners", () => {
  test("metrics_listen equal to listen", () => {
    const text = `[server]\nlisten = ["127.0.0.1:8080"]\nmetrics_listen = "127.0.0.1:8080"\n`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:3:1: server.metrics_listen: port 8080 is also taken by server.listen[0] ("127.0.0.1:8080"): one address cannot be listened on twice; give one of them another port',
    ]);
  });

  test("a wildcard beside a specific address, either way round, and localhost beside 127.0.0.1", () => {
    expect(errors(`[server]\nlisten = ["127.0.0.1:8080", "0.0.0.0:8080"]\n`)).toEqual([
      'quartermaster.toml:2:29: server.listen[1]: port 8080 is also taken by server.listen[0] ("127.0.0.1:8080"): "0.0.0.0" takes the port on every address; give one of them another port',
    ]);
    expect(errors(`[server]\nlisten = ["[::]:9000"]\nmetrics_listen = "10.0.0.2:9000"\n`)).toEqual([
      'quartermaster.toml:3:1: server.metrics_listen: port 9000 is also taken by server.listen[0] ("[::]:9000"): "::" takes the port on every address; give one of them another port',
    ]);
    expect(errors(`[server]\nlisten = ["localhost:8080", "127.0.0.1:8080"]\n`)).toEqual([
      'quartermaster.toml:2:29: server.listen[1]: port 8080 is also taken by server.listen[0] ("localhost:8080"): "localhost" and "127.0.0.1" are the same address; give one of them another port',
    ]);
  });

  test("what may share a port: distinct specific addresses, other families, port 0", () => {
    for (const listen of [
      `["127.0.0.1:8080", "10.0.0.2:8080"]`,
      `["0.0.0.0:8080", "[::1]:8080"]`,
      `["127.0.0.1:0", "0.0.0.0:0"]`,
    ]) {
      expect(load(`[server]\nlisten = ${listen}\n`).server.listen.length).toBe(2);
    }
    const config = load(`[server]\nlisten = ["127.0.0.1:0"]\nmetrics_listen = "127.0.0.1:0"\n`);
    expect(config.server.metricsListen).toBe("127.0.0.1:0");
  });
});

describe("model ports", () => {
  test("a model's fixed port equal to a listener's", () => {
    const text = `[server]
listen = ["0.0.0.0:8080"]
metrics_listen = "127.0.0.1:9100"
[models.a]
cmd = "llama-server --port 8080"
proxy = "http://127.0.0.1:8080"
[models.b]
cmd = "llama-server --port 9100"
proxy = "http://localhost:9100"
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:6:1: models.a.proxy: port 8080 is qm\'s own listener server.listen[0] ("0.0.0.0:8080"); give the model another port, or let qm choose one with ${PORT}',
      'quartermaster.toml:9:1: models.b.proxy: port 9100 is qm\'s own listener server.metrics_listen ("127.0.0.1:9100"); give the model another port, or let qm choose one with ${PORT}',
    ]);
  });

  test("two models on one fixed port that may run together (different groups)", () => {
    const text = `[models.a]
cmd = "llama-server --port 9000"
proxy = "http://127.0.0.1:9000"
[models."b.x"]
cmd = "llama-server --port 9000"
proxy = "http://127.0.0.1:9000"
[groups.one]
members = ["a"]
[groups.two]
members = ["b.x"]
`;
    expect(errors(text)).toEqual([
      'quartermaster.toml:6:1: models."b.x".proxy: port 9000 is also model "a"\'s (models.a.proxy), and both may run at once; give one of them another port (or ${PORT}), or put both in one group with swap = true',
    ]);
  });

  test("one swap group (the implicit default one too) runs one at a time: they may share a port", () => {
    const models = `[models.a]
cmd = "llama-server --port 9000"
proxy = "http://127.0.0.1:9000"
[models.b]
cmd = "llama-server --port 9000"
proxy = "http://127.0.0.1:9000"
`;
    expect(Object.keys(load(models).models)).toEqual(["a", "b"]);
    expect(errors(`${models}[groups.g]\nmembers = ["a", "b"]\nswap = false\n`)).toEqual([
      'quartermaster.toml:6:1: models.b.proxy: port 9000 is also model "a"\'s (models.a.proxy), and both may run at once; give one of them another port (or ${PORT}), or put both in one group with swap = true',
    ]);
  });

  test("under the matrix policy, a set holding both is a clash; none is not", () => {
    const models = `[router]
policy = "matrix"
[models.a]
cmd = "llama-server --port 9000"
proxy = "http://127.0.0.1:9000"
[models.b]
cmd = "llama-server --port 9000"
proxy = "http://127.0.0.1:9000"
`;
    expect(load(`${models}[matrix]\nsets = [["a"], ["b"]]\n`).matrix.sets).toEqual([["a"], ["b"]]);
    expect(errors(`${models}[matrix]\nsets = [["a", "b"]]\n`)).toEqual([
      'quartermaster.toml:8:1: models.b.proxy: port 9000 is also model "a"\'s (models.a.proxy), and both may run at once; give one of them another port (or ${PORT}), or keep them out of one matrix set',
    ]);
  });

  test("not clashes: ${PORT} models, remote upstreams, one server named by several models' proxies", () => {
    const text = `[server]
listen = ["127.0.0.1:8080"]
[models.a]
cmd = "llama-server --port \${PORT}"
[models.remote]
cmd = "sleep 1"
proxy = "http://10.0.0.9:8080"
[models.x]
cmd = "sleep infinity"
proxy = "http://127.0.0.1:7000"
check_endpoint = "none"
[models.y]
cmd = "sleep infinity"
proxy = "http://127.0.0.1:7000"
check_endpoint = "none"
[models.z]
cmd = "run z"
proxy = "http://127.0.0.1:7000"
[groups.one]
members = ["x"]
[groups.two]
members = ["y", "z"]
swap = false
`;
    expect(Object.keys(load(text).models)).toEqual(["a", "remote", "x", "y", "z"]);
  });
});
