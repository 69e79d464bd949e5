import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { scanCommand } from "../../../src/gpu/gguf/scan.ts";
import { config as load } from "../../support/config.ts";
import { llama } from "./fake-models.ts";
import { buildGguf, type GgufSpec, val, writeModelFile } from "./gguf-writer.ts";

let dir: string;

/** Whether `llama-server` is on the (pretend) PATH. */
let serverOnPath = true;

async function scan(...argv: string[]) {
  let out = "";
  let err = "";
  const code = await scanCommand(argv, {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    which: (program) => (serverOnPath && program === "llama-server" ? "/bin/llama-server" : null),
  });
  return { code, out, err };
}

const small = (extra: Partial<Parameters<typeof llama>[0]> = {}) =>
  llama({
    layers: 2,
    embd: 256,
    heads: 4,
    kvHeads: 2,
    ffn: 512,
    vocab: 1024,
    ctxLen: 4096,
    fileType: 2,
    ...extra,
  });

/** Splits a model's tensors over `n` parts as gguf-split does. */
function splitParts(
  spec: GgufSpec & { tensors: NonNullable<GgufSpec["tensors"]> },
  n: number,
): GgufSpec[] {
  const per = Math.ceil(spec.tensors.length / n);
  return Array.from({ length: n }, (_, i) => ({
    kv: [
      ...(i === 0 ? (spec.kv ?? []) : []),
      ["split.no", val.u16(i)],
      ["split.count", val.u16(n)],
      ...(i === 0
        ? [
            ["split.tensors.count", val.i32(spec.tensors.length)] as [
              string,
              ReturnType<typeof val.i32>,
            ],
          ]
        : []),
    ],
    tensors: spec.tensors.slice(i * per, (i + 1) * per),
  }));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "qm-scan-"));
  await mkdir(join(dir, "nested/deeper"), { recursive: true });
  await writeModelFile(join(dir, "Qwen2.5-7B Instruct.Q4_0.gguf"), small({ arch: "qwen2" }));
  const big = small({ layers: 3 });
  const parts = splitParts(big, 3);
  for (const [i, p] of parts.entries()) {
    await writeModelFile(join(dir, `nested/deeper/big-model-0000${i + 1}-of-00003.gguf`), p);
  }
  await writeModelFile(join(dir, "nested/mmproj-model-f16.gguf"), small({ arch: "clip" }));
  await writeModelFile(join(dir, "nested/vision.gguf"), small({ arch: "clip" }));
  await writeModelFile(join(dir, "vocab.gguf"), {
    kv: [["general.architecture", val.str("llama")]],
  });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("qm scan", () => {
  test("prints one loadable entry per model, split models summed, projectors skipped", async () => {
    const r = await scan(dir);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const config = load(r.out, { file: "scan.toml" });
    expect(Object.keys(config.models).sort()).toEqual(["big-model", "qwen2-5-7b-instruct-q4_0"]);
    const qwen = config.models["qwen2-5-7b-instruct-q4_0"]!;
    // The path with a space survives qm's shell-style split.
    expect(qwen.argv).toEqual([
      "llama-server",
      "--port",
      String(qwen.port),
      "-m",
      join(dir, "Qwen2.5-7B Instruct.Q4_0.gguf"),
      "--ctx-size",
      "4096",
      "--alias",
      "qwen2-5-7b-instruct-q4_0",
    ]);
    const big = config.models["big-model"]!;
    expect(big.argv[4]).toBe(join(dir, "nested/deeper/big-model-00001-of-00003.gguf"));
    expect(r.out.replaceAll(dir, "DIR")).toContain(
      [
        "[models.qwen2-5-7b-instruct-q4_0]",
        "# qwen2 · 1.7M params · Q4_0 · weights 0.00 GB + KV 0.00 GB at ctx 4096 + overhead 0.50 GB",
        `cmd = "llama-server --port \${PORT} -m 'DIR/Qwen2.5-7B Instruct.Q4_0.gguf' --ctx-size 4096 --alias \${MODEL_ID}"`,
        "est_vram_gb = 0.6",
      ].join("\n"),
    );
    expect(r.out).toContain(
      `# skipped ${join(dir, "nested/mmproj-model-f16.gguf")}: multimodal projector (add --mmproj`,
    );
    expect(r.out).toContain(
      `# skipped ${join(dir, "nested/vision.gguf")}: multimodal projector (clip)`,
    );
    expect(r.out).toContain(`# skipped ${join(dir, "vocab.gguf")}: no tensors`);
  });

  test("a relative DIR still prints absolute model paths: the entries work from any folder", async () => {
    const rel = relative(process.cwd(), join(dir, "nested"));
    expect(rel.startsWith("/")).toBe(false);
    const r = await scan(rel);
    expect(r.code).toBe(0);
    const config = load(r.out, { file: "scan.toml" });
    expect(config.models["big-model"]!.argv[4]).toBe(
      join(dir, "nested/deeper/big-model-00001-of-00003.gguf"),
    );
    expect(r.out).toContain(`# skipped ${join(dir, "nested/vision.gguf")}:`);
  });

  test("warns, on stderr, when llama-server is not on PATH; the entries still print", async () => {
    serverOnPath = false;
    try {
      const r = await scan(join(dir, "nested"));
      expect(r.code).toBe(0);
      expect(r.out).toContain("[models.big-model]");
      expect(r.err).toBe(
        "qm scan: warning: llama-server was not found on PATH; the entries start it (install llama.cpp's server, or give its full path in cmd)\n",
      );
    } finally {
      serverOnPath = true;
    }
  });

  test("estimates match sizeModel over all parts, rounded up to 0.1", async () => {
    const r = await scan(join(dir, "nested"), "--ctx", "2048");
    const config = load(r.out, { file: "scan.toml" });
    const spec = small({ layers: 3 });
    const weights = spec.tensors.reduce((a, t) => a + t.bytes, 0);
    const kv = 2 * 3 * 2048 * 2 * 64 * 2;
    const expected =
      Math.ceil((((weights + kv) * 1.05 + 512 * 2 ** 20) / 2 ** 30) * 10 - 1e-9) / 10;
    expect(config.models["big-model"]!.estVramGb).toBe(expected);
    expect(config.models["big-model"]!.argv).toContain("2048");
  });

  test("--gpu-layers adds -ngl; all = 999", async () => {
    const r = await scan(join(dir, "nested"), "--gpu-layers", "1");
    expect(r.out).toContain(`--ctx-size 4096 --alias \${MODEL_ID} -ngl 1`);
    expect((await scan(join(dir, "nested"), "--gpu-layers", "all")).out).toContain("-ngl 999");
  });

  test("corrupt, truncated and incomplete files are reported; the rest still print", async () => {
    const bad = await mkdtemp(join(tmpdir(), "qm-scan-bad-"));
    try {
      await writeModelFile(join(bad, "good.gguf"), small());
      await writeFile(join(bad, "garbage.gguf"), "<html>404</html>");
      await writeFile(join(bad, "cut.gguf"), buildGguf(small()).bytes.subarray(0, 200));
      await writeFile(join(bad, "nodata.gguf"), buildGguf(small()).bytes);
      await writeModelFile(join(bad, "half-00001-of-00002.gguf"), small());
      const r = await scan(bad);
      expect(r.code).toBe(1);
      expect(r.out).toContain("[models.good]");
      const lines = r.err.trim().split("\n");
      expect(lines).toEqual([
        `qm scan: ${join(bad, "half-00001-of-00002.gguf")}: split model is missing part 2 of 2`,
        expect.stringMatching(
          /cut\.gguf: implausible counts .* file of 200 bytes \(truncated or corrupt\?\)/,
        ),
        expect.stringMatching(/garbage\.gguf: not a GGUF file \(starts with "<htm"\)/),
        expect.stringMatching(
          /nodata\.gguf: file is \d+ bytes but its tensors need \d+ \(incomplete download\?\)/,
        ),
        "qm scan: 4 files could not be used",
      ]);
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });

  test("same file names get distinct ids; symlinked directories are followed once", async () => {
    const d = await mkdtemp(join(tmpdir(), "qm-scan-dup-"));
    try {
      await mkdir(join(d, "a"));
      await mkdir(join(d, "b"));
      await writeModelFile(join(d, "a/model.gguf"), small());
      await writeModelFile(join(d, "b/model.gguf"), small());
      await symlink(d, join(d, "b/loop"));
      const r = await scan(d);
      expect(r.code).toBe(0);
      expect(r.out.match(/^\[models\.[^\]]+\]$/gm)).toEqual(["[models.model]", "[models.model-2]"]);
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });

  test("usage and missing inputs", async () => {
    expect(await scan("--help")).toMatchObject({
      code: 0,
      out: expect.stringContaining("Usage: qm scan DIR"),
    });
    expect(await scan()).toMatchObject({ code: 2, err: expect.stringContaining("missing DIR") });
    expect(await scan(dir, "--ctx", "abc")).toMatchObject({
      code: 2,
      err: expect.stringContaining("--ctx"),
    });
    expect(await scan(dir, "--gpu-layers", "-1")).toMatchObject({ code: 2 });
    expect(await scan(dir, "--frobnicate")).toMatchObject({ code: 2 });
    const missing = await scan(join(dir, "nope"));
    expect(missing).toMatchObject({
      code: 1,
      err: expect.stringContaining("nope: no such file or directory"),
    });
    const empty = await mkdtemp(join(tmpdir(), "qm-scan-empty-"));
    try {
      expect(await scan(empty)).toMatchObject({
        code: 1,
        err: expect.stringContaining("no GGUF model found"),
      });
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
