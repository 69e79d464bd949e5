import { describe, expect, test } from "bun:test";
import { type ByteSource, bytesSource } from "../../../src/gpu/gguf/byte-source.ts";
import { ARRAY_KEEP_LIMIT, readGgufHeader } from "../../../src/gpu/gguf/read-header.ts";
import type { GgufHeader } from "../../../src/gpu/gguf/types.ts";
import { tensor } from "./fake-models.ts";
import { buildGguf, type GgufSpec, val, Writer } from "./gguf-writer.ts";

async function read(bytes: Uint8Array, chunkBytes?: number) {
  return readGgufHeader(bytesSource(bytes), chunkBytes ? { chunkBytes } : {});
}

async function header(spec: GgufSpec, chunkBytes?: number): Promise<GgufHeader> {
  const r = await read(buildGguf(spec).bytes, chunkBytes);
  if (!r.ok) throw new Error(r.reason);
  return r.header;
}

const EVERY_TYPE: GgufSpec = {
  kv: [
    ["u8", val.u8(250)],
    ["i8", val.i8(-5)],
    ["u16", val.u16(65000)],
    ["i16", val.i16(-300)],
    ["u32", val.u32(4_000_000_000)],
    ["i32", val.i32(-7)],
    ["f32", val.f32(0.5)],
    ["bool", val.bool(true)],
    ["str", val.str("héllo")],
    ["u64", val.u64(2n ** 40n)],
    ["u64.big", val.u64(2n ** 63n)],
    ["i64", val.i64(-(2n ** 40n))],
    ["f64", val.f64(1e-300)],
    ["layers", val.i32s([8, 0, 8])],
    ["names", val.strs(["a", "", "ç"])],
    ["nested", val.arr(9, [val.u32s([1, 2]), val.u32s([])])],
  ],
  tensors: [tensor("a", [32, 2], "Q4_0"), tensor("b", [7], "F32")],
};

describe("readGgufHeader", () => {
  test("reads every metadata type, arrays included (v3)", async () => {
    const h = await header(EVERY_TYPE);
    expect(h.version).toBe(3);
    const m = Object.fromEntries(h.metadata);
    expect(m).toMatchObject({
      u8: 250,
      i8: -5,
      u16: 65000,
      i16: -300,
      u32: 4_000_000_000,
      i32: -7,
      f32: 0.5,
      bool: true,
      str: "héllo",
      u64: 2 ** 40,
      "u64.big": 2n ** 63n,
      i64: -(2 ** 40),
      f64: 1e-300,
    });
    expect(m.layers).toEqual({ kind: "array", itemType: 5, length: 3, items: [8, 0, 8] });
    expect(m.names).toEqual({ kind: "array", itemType: 8, length: 3, items: ["a", "", "ç"] });
    expect(m.nested).toEqual({
      kind: "array",
      itemType: 9,
      length: 2,
      items: [
        { kind: "array", itemType: 4, length: 2, items: [1, 2] },
        { kind: "array", itemType: 4, length: 0, items: [] },
      ],
    });
  });

  test("tensor infos: name, dims, type, offset, size", async () => {
    const h = await header(EVERY_TYPE);
    expect(h.tensors).toEqual([
      { name: "a", dims: [32, 2], type: 2, offset: 0, bytes: 36 },
      { name: "b", dims: [7], type: 0, offset: 64, bytes: 28 },
    ]);
    expect(h.alignment).toBe(32);
    expect(h.dataOffset % 32).toBe(0);
    expect(h.dataBytes).toBe(92);
  });

  test("v2 has the same layout and reads the same", async () => {
    const v3 = await header(EVERY_TYPE);
    const v2 = await header({ ...EVERY_TYPE, version: 2 });
    expect(v2.version).toBe(2);
    expect(v2.metadata).toEqual(v3.metadata);
    expect(v2.tensors).toEqual(v3.tensors);
  });

  test("the same result whatever the read-ahead size", async () => {
    const whole = await header(EVERY_TYPE);
    for (const chunk of [1, 3, 7, 64]) expect(await header(EVERY_TYPE, chunk)).toEqual(whole);
  });

  test("general.alignment moves the data section", async () => {
    const h = await header({
      kv: [["general.alignment", val.u32(256)]],
      tensors: [tensor("a", [32], "Q8_0"), tensor("b", [32], "Q8_0")],
      alignment: 256,
    });
    expect(h.alignment).toBe(256);
    expect(h.dataOffset).toBe(256);
    expect(h.tensors.map((t) => t.offset)).toEqual([0, 256]);
  });

  test("large arrays are skipped unread, and what follows still parses", async () => {
    const tokens = Array.from({ length: 20_000 }, (_, i) => `tok${i}`);
    const scores = Array.from({ length: 300_000 }, () => 0);
    const spec: GgufSpec = {
      kv: [
        ["tokenizer.ggml.tokens", val.strs(tokens)],
        ["tokenizer.ggml.scores", val.f32s(scores)],
        ["after", val.str("still here")],
      ],
      tensors: [tensor("t", [64], "F16")],
    };
    const bytes = buildGguf(spec).bytes;
    let read = 0;
    const counting: ByteSource = {
      name: "counting",
      size: bytes.length,
      read: async (s, e) => {
        read += e - s;
        return bytes.subarray(s, e);
      },
    };
    const r = await readGgufHeader(counting, { chunkBytes: 4096 });
    if (!r.ok) throw new Error(r.reason);
    const m = r.header.metadata;
    expect(m.get("tokenizer.ggml.tokens")).toEqual({
      kind: "array",
      itemType: 8,
      length: 20_000,
      items: null,
    });
    expect(m.get("tokenizer.ggml.scores")).toEqual({
      kind: "array",
      itemType: 6,
      length: 300_000,
      items: null,
    });
    expect(m.get("after")).toBe("still here");
    expect(r.header.tensors[0]!.name).toBe("t");
    // The 1.2 MB of fixed-size scores were jumped over, not read.
    expect(read).toBeLessThan(bytes.length - 1_000_000);
    expect(ARRAY_KEEP_LIMIT).toBeLessThan(20_000);
  });
});

describe("readGgufHeader refuses bad files with a reason, never a throw", () => {
  const good = buildGguf(EVERY_TYPE).bytes;

  async function reason(bytes: Uint8Array): Promise<string> {
    const r = await read(bytes);
    if (r.ok) throw new Error("expected a failure");
    return r.reason;
  }

  function patched(f: (v: DataView) => void): Uint8Array {
    const b = good.slice();
    f(new DataView(b.buffer));
    return b;
  }

  test("not GGUF", async () => {
    expect(await reason(new TextEncoder().encode("<html>oops</html>"))).toMatch(/not a GGUF file/);
    expect(await reason(new Uint8Array([0x47, 0x47]))).toMatch(/too short/);
  });

  test("v1, big-endian and unknown versions", async () => {
    expect(await reason(patched((v) => v.setUint32(4, 1, true)))).toMatch(/v1 is not supported/);
    expect(await reason(patched((v) => v.setUint32(4, 3, false)))).toMatch(/big-endian/);
    expect(await reason(patched((v) => v.setUint32(4, 7, true)))).toMatch(
      /unsupported GGUF version 7/,
    );
  });

  test("every truncation of the header is reported as such", async () => {
    const { bytes, dataOffset } = buildGguf(EVERY_TYPE);
    for (let n = 4; n < dataOffset - 32; n++) {
      const r = await read(bytes.subarray(0, n));
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(/truncated|past the end|implausible/);
    }
  });

  test("implausible counts", async () => {
    expect(await reason(patched((v) => v.setBigUint64(8, 2n ** 40n, true)))).toMatch(
      /implausible counts/,
    );
    expect(await reason(patched((v) => v.setBigUint64(16, 2n ** 62n, true)))).toMatch(
      /implausible/,
    );
  });

  function single(write: (w: Writer) => void): Uint8Array {
    const w = new Writer();
    w.bytes(new TextEncoder().encode("GGUF"));
    w.u32(3);
    write(w);
    w.bytes(new Uint8Array(64));
    return w.finish();
  }

  test("unknown value type, duplicate key, huge string", async () => {
    const unknownType = single((w) => {
      w.u64(0);
      w.u64(1);
      w.str("k");
      w.u32(13);
    });
    expect(await reason(unknownType)).toMatch(/unknown value type 13 for k/);
    const dup = single((w) => {
      w.u64(0);
      w.u64(2);
      for (let i = 0; i < 2; i++) {
        w.str("k");
        w.u32(4);
        w.u32(1);
      }
    });
    expect(await reason(dup)).toMatch(/duplicate metadata key k/);
    const huge = single((w) => {
      w.u64(0);
      w.u64(1);
      w.u64(2n ** 50n);
    });
    expect(await reason(huge)).toMatch(/past the end/);
  });

  test("bad tensor infos", async () => {
    const bad = async (t: { dims: number[]; type: number; offset?: number }) =>
      reason(buildGguf({ tensors: [{ name: "w", bytes: 0, ...t }] }).bytes);
    expect(await bad({ dims: [32], type: 42 })).toMatch(/tensor w: unknown ggml type 42/);
    expect(await bad({ dims: [1, 1, 1, 1, 1], type: 0 })).toMatch(/5 dimensions/);
    expect(await bad({ dims: [33], type: 2 })).toMatch(/not a multiple of Q4_0's block of 32/);
    expect(await bad({ dims: [32], type: 0, offset: 8 })).toMatch(
      /offset 8 is not a multiple of 32/,
    );
    const align = buildGguf({ kv: [["general.alignment", val.u32(48)]] }).bytes;
    expect(await reason(align)).toMatch(/not a power of two/);
  });

  test("random corruption never throws", async () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let i = 0; i < 500; i++) {
      const b = good.slice();
      for (let k = 0; k < 3; k++) b[rand() % b.length] = rand() % 256;
      const r = await read(b);
      expect(typeof r.ok).toBe("boolean");
    }
  });
});
