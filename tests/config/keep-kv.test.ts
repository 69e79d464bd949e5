// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${PORT} is qm's macro, literal text here
/** `keep_kv`: llama-server only, `--slot-save-path` under the state dir, its hash and limits. */
import { describe, expect, test } from "bun:test";
import { safeName } from "../../src/config/build-models.ts";
import { mintVariant } from "../../src/config/variant.ts";
import { config } from "../support/config.ts";
import { errors } from "./support.ts";

const LLAMA = "/opt/llama/bin/llama-server -m /models/a.gguf --port 9001";

describe("keep_kv", () => {
  test("adds --slot-save-path <state_dir>/kv/<id>/ and carries the limits", () => {
    const c = config(`[server]
state_dir = "/var/qm"
[models.a]
cmd = "${LLAMA}"
proxy = "http://127.0.0.1:9001"
keep_kv = true
keep_kv_max_mb = 100
keep_kv_timeout_s = 2.5
`);
    const m = c.models.a!;
    expect(m.argv.slice(-2)).toEqual(["--slot-save-path", "/var/qm/kv/a/"]);
    expect(m.cmd).toBe(`${LLAMA} --slot-save-path /var/qm/kv/a/`);
    expect(m.keepKv).toEqual({
      dir: "/var/qm/kv/a",
      maxBytes: 100 * 1024 * 1024,
      timeoutMs: 2500,
      hash: expect.stringMatching(/^[0-9a-f]+$/),
      modelFile: "/models/a.gguf",
    });
    // A variant at another context size keeps no cache of the base's.
    expect(mintVariant(m, { ctx: 4096, port: 9100, estVramGb: 0 }).keepKv).toBeNull();
  });

  test("off by default: the command is untouched", () => {
    const m = config(`[models.a]\ncmd = "${LLAMA}"\n`).models.a!;
    expect(m.keepKv).toBeNull();
    expect(m.argv).not.toContain("--slot-save-path");
  });

  test("the hash follows the command and env, not the limits", () => {
    const hash = (extra: string, cmd = LLAMA) =>
      config(`[models.a]\ncmd = "${cmd}"\nkeep_kv = true\n${extra}`).models.a!.keepKv!.hash;
    const base = hash("");
    expect(hash("keep_kv_max_mb = 5")).toBe(base);
    expect(hash("", `${LLAMA} -c 8192`)).not.toBe(base);
    expect(hash('env = { CUDA_VISIBLE_DEVICES = "1" }')).not.toBe(base);
  });

  test("the hash is taken before ${PORT} is filled in: another port is the same cache", () => {
    const at = (startPort: number, ctx = "") => {
      const m = config(`[server]
start_port = ${startPort}
[models.a]
cmd = "llama-server -m /models/a.gguf --port \${PORT}${ctx}"
env = { LLAMA_ARG_PORT = "\${PORT}" }
keep_kv = true
`).models.a!;
      return { port: m.port, hash: m.keepKv!.hash };
    };
    const first = at(20100);
    const moved = at(20200);
    expect(moved.port).not.toBe(first.port);
    expect(moved.hash).toBe(first.hash);
    // The context size is the cache's shape: another one is another cache.
    expect(at(20100, " --ctx-size 8192").hash).not.toBe(first.hash);
    expect(at(20100, " -c 4096").hash).not.toBe(at(20100, " -c 8192").hash);
  });

  test("a model id becomes one safe path segment", () => {
    expect(safeName("qwen3-8b.q4")).toBe("qwen3-8b.q4");
    expect(safeName("node/llama 3")).toMatch(/^node_llama_3-[0-9a-f]{1,8}$/);
    expect(safeName("..")).toMatch(/^_-[0-9a-f]+$/);
    expect(safeName("a/b")).not.toBe(safeName("a_b"));
  });

  test("refused with file:line:col for a command that is not llama-server", () => {
    expect(
      errors(`[models.v]
cmd = "vllm serve Qwen/Qwen3-8B --port 9002"
keep_kv = true
`),
    ).toEqual([
      "quartermaster.toml:3:1: models.v.keep_kv: keep_kv needs llama-server (its --slot-save-path and /slots API); this model's cmd does not run llama-server",
    ]);
    expect(
      errors(`[models.l]
cmd = "${LLAMA} --slot-save-path /tmp/x/"
keep_kv = true
`),
    ).toEqual([
      "quartermaster.toml:3:1: models.l.keep_kv: keep_kv sets --slot-save-path itself: remove it from cmd",
    ]);
    expect(errors(`[models.l]\ncmd = "${LLAMA}"\nkeep_kv_max_mb = 0\n`)[0]).toContain(
      "models.l.keep_kv_max_mb",
    );
  });
});
