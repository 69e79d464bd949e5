/**
 * `qm keys hash` and `qm keys new NAME`: the hash the config loader computes for the same key,
 * a trailing newline ignored; a new key whose printed table loads and names that very key.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { keysCommand } from "../../src/cli/keys.ts";
import { KeyTable } from "../../src/keys/table.ts";
import { sha256Hex } from "../../src/shared/digest.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { config } from "../support/config.ts";
import { QM } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

async function run(argv: string[], stdin = "", random = (n: number) => new Uint8Array(n).fill(7)) {
  let out = "";
  let err = "";
  const code = await keysCommand(argv, {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    stdin: async () => stdin,
    random,
  });
  return { code, out, err };
}

describe("qm keys hash", () => {
  test("lower-case hex SHA-256 of stdin; one trailing newline (LF or CRLF) is ignored", async () => {
    const want = `${sha256Hex("sk-alice")}\n`;
    for (const input of ["sk-alice", "sk-alice\n", "sk-alice\r\n"]) {
      expect({ input, ...(await run(["hash"], input)) }).toEqual({
        input,
        code: 0,
        out: want,
        err: "",
      });
    }
    // Only one: a second newline is part of the key.
    expect((await run(["hash"], "sk-alice\n\n")).out).toBe(`${sha256Hex("sk-alice\n")}\n`);
    expect(want).toMatch(/^[0-9a-f]{64}\n$/);
  });

  test("what it prints is what the loader makes of key = …", async () => {
    const { out } = await run(["hash"], "s3cret\n");
    const c = config(`[keys.b]\nkey_sha256 = "${out.trim()}"\n`);
    expect(KeyTable.of(c).lookup("s3cret")?.name).toBe("b");
  });

  test("nothing on stdin is an error; a key on the command line is a usage error", async () => {
    expect(await run(["hash"], "\n")).toMatchObject({ code: 1, out: "" });
    await expect(run(["hash", "sk-alice"])).rejects.toThrow("reads the key from stdin");
  });

  test("the binary reads stdin", async () => {
    const p = Bun.spawn([QM, "keys", "hash"], { stdin: new Blob(["sk-alice\n"]), stdout: "pipe" });
    expect(await new Response(p.stdout).text()).toBe(`${sha256Hex("sk-alice")}\n`);
    expect(await p.exited).toBe(0);
  });
});

describe("qm keys new", () => {
  test("a random key, then a table that loads and names it; the config holds no secret", async () => {
    const { code, out } = await run(["new", "ci-bot"]);
    expect(code).toBe(0);
    const [key, ...table] = out.trimEnd().split("\n");
    expect(key).toBe(`qm-${Buffer.from(new Uint8Array(32).fill(7)).toString("base64url")}`);
    expect(table).toEqual(["[keys.ci-bot]", `key_sha256 = "${sha256Hex(key!)}"`]);
    const c = config(table.join("\n"));
    expect(KeyTable.of(c).lookup(key!)?.name).toBe("ci-bot");
    expect(table.join("\n")).not.toContain(key!);
  });

  test("each key is new; a dotted name is quoted", async () => {
    const a = await Bun.spawn([QM, "keys", "new", "a"], { stdout: "pipe" });
    const b = await Bun.spawn([QM, "keys", "new", "a"], { stdout: "pipe" });
    const [ka, kb] = await Promise.all(
      [a, b].map(async (p) => (await new Response(p.stdout).text()).split("\n")[0]),
    );
    expect(ka).toMatch(/^qm-[A-Za-z0-9_-]{43}$/);
    expect(ka).not.toBe(kb);
    expect((await run(["new", "team.ml"])).out).toContain('[keys."team.ml"]');
  });

  test("bad names and missing ones are usage errors (exit 2 from the binary)", async () => {
    for (const argv of [
      ["new"],
      ["new", "a b"],
      ["new", "admin"],
      ["new", "anonymous"],
      ["new", "a", "b"],
      ["nope"],
    ]) {
      const p = Bun.spawn([QM, "keys", ...argv], { stdout: "pipe", stderr: "pipe" });
      expect({ argv, code: await p.exited }).toEqual({ argv, code: 2 });
    }
  });
});
