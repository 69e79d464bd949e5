/**
 * The release folder's format, read back by the tools a user has: the archives by the system's
 * `tar`, SHA256SUMS by `sha256sum -c` and `shasum -c`, manifest.json as the documented shape.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256 } from "../../scripts/release/pack.ts";
import { tar, tarGz } from "../../scripts/release/tar.ts";
import { ROOT } from "../support/qm-process.ts";
import { FAKE_COMMIT, FAKE_VERSION, fakeRelease } from "./fake-release.ts";

const release = fakeRelease();
afterAll(() => rmSync(release.dir, { recursive: true, force: true }));

function sh(cmd: string[], cwd: string) {
  const p = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("tar writer", () => {
  test("GNU/BSD tar reads it: names, modes, owners, time and contents survive", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-tar-"));
    try {
      const big = new Uint8Array(1_000_003).map((_, i) => (i * 7) % 251); // not a block multiple
      writeFileSync(
        join(dir, "a.tar.gz"),
        tarGz(
          [
            { name: "top/", mode: 0o755 },
            {
              name: "top/run",
              data: new TextEncoder().encode("#!/bin/sh\necho hi\n"),
              mode: 0o755,
            },
            { name: "top/big.bin", data: big, mode: 0o644 },
            { name: "top/empty", data: new Uint8Array(0), mode: 0o600 },
          ],
          1_700_000_000,
        ),
      );
      const list = sh(["tar", "--numeric-owner", "-tvzf", "a.tar.gz"], dir);
      expect(list.code).toBe(0);
      const rows = list.out
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/));
      expect(rows.map((r) => [r[0], r[1], r[2], r.at(-1)])).toEqual([
        ["drwxr-xr-x", "0/0", "0", "top/"],
        ["-rwxr-xr-x", "0/0", "18", "top/run"],
        ["-rw-r--r--", "0/0", "1000003", "top/big.bin"],
        ["-rw-------", "0/0", "0", "top/empty"],
      ]);
      expect(sh(["tar", "-xzf", "a.tar.gz"], dir).code).toBe(0);
      expect(new Uint8Array(readFileSync(join(dir, "top/big.bin")))).toEqual(big);
      expect(sh([join(dir, "top/run")], dir).out).toBe("hi\n");
      expect(statSync(join(dir, "top/run")).mtimeMs).toBe(1_700_000_000_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the same entries give the same bytes (reproducible archives)", () => {
    const entries = [{ name: "x/y", data: new Uint8Array([1, 2, 3]), mode: 0o644 }];
    expect(sha256(tarGz(entries, 5))).toBe(sha256(tarGz(entries, 5)));
    expect(sha256(tarGz(entries, 5))).not.toBe(sha256(tarGz(entries, 6)));
  });

  test("a name longer than the ustar field is refused, not cut", () => {
    expect(() =>
      tar([{ name: `${"a".repeat(101)}`, data: new Uint8Array(1), mode: 0o644 }], 0),
    ).toThrow("longer than 100 bytes");
  });
});

describe("release folder", () => {
  test("holds the five archives, SHA256SUMS and manifest.json, nothing else", () => {
    expect(readdirSync(release.out).sort()).toEqual(
      [
        "SHA256SUMS",
        "manifest.json",
        ...["darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64", "linux-x64-baseline"].map(
          (p) => `qm-${FAKE_VERSION}-${p}.tar.gz`,
        ),
      ].sort(),
    );
  });

  test("manifest.json: version, full commit, one asset per target with os, arch, file, sha256, size", () => {
    const manifest = JSON.parse(readFileSync(join(release.out, "manifest.json"), "utf8"));
    const assets = [
      ["linux", "x64"],
      ["linux", "x64-baseline"],
      ["linux", "arm64"],
      ["darwin", "arm64"],
      ["darwin", "x64"],
    ].map(([os, arch]) => {
      const file = `qm-${FAKE_VERSION}-${os}-${arch}.tar.gz`;
      const bytes = readFileSync(join(release.out, file));
      return { os, arch, file, sha256: sha256(bytes), size: bytes.length };
    });
    expect(manifest).toEqual({ version: FAKE_VERSION, commit: FAKE_COMMIT, assets });
  });

  test("SHA256SUMS: one sha256sum line per archive; sha256sum -c and shasum -c accept it", () => {
    const lines = readFileSync(join(release.out, "SHA256SUMS"), "utf8").split("\n");
    expect(lines.pop()).toBe("");
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line).toMatch(/^[0-9a-f]{64} {2}qm-\S+\.tar\.gz$/);
    expect(sh(["sha256sum", "-c", "--strict", "SHA256SUMS"], release.out)).toMatchObject({
      code: 0,
    });
    if (Bun.which("shasum")) {
      expect(sh(["shasum", "-a", "256", "-c", "SHA256SUMS"], release.out)).toMatchObject({
        code: 0,
      });
    }
  });

  test("each archive holds qm-VERSION-OS-ARCH/ with an executable qm, LICENSE, README.md, quartermaster.toml", () => {
    for (const m of release.manifest.assets) {
      const stem = m.file.replace(/\.tar\.gz$/, "");
      const list = sh(["tar", "-tvzf", m.file], release.out);
      const rows = list.out
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/));
      expect({ file: m.file, rows: rows.map((r) => [r[0], r.at(-1)]) }).toEqual({
        file: m.file,
        rows: [
          ["drwxr-xr-x", `${stem}/`],
          ["-rwxr-xr-x", `${stem}/qm`],
          ["-rw-r--r--", `${stem}/LICENSE`],
          ["-rw-r--r--", `${stem}/README.md`],
          ["-rw-r--r--", `${stem}/quartermaster.toml`],
        ],
      });
    }
    const linux = release.manifest.assets[0]!;
    const dir = mkdtempSync(join(tmpdir(), "qm-unpack-"));
    try {
      expect(sh(["tar", "-xzf", join(release.out, linux.file)], dir).code).toBe(0);
      const stem = linux.file.replace(/\.tar\.gz$/, "");
      for (const name of ["LICENSE", "README.md", "quartermaster.toml"]) {
        expect(readFileSync(join(dir, stem, name), "utf8")).toBe(
          readFileSync(join(ROOT, name), "utf8"),
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test("LICENSE is the MIT licence, held by the quartermaster authors", () => {
  const text = readFileSync(join(ROOT, "LICENSE"), "utf8");
  expect(text).toStartWith("MIT License\n\nCopyright (c) ");
  expect(text).toContain("the quartermaster authors");
  expect(text).toContain('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND');
});
