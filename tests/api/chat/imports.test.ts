/**
 * Each translated API stands on `api/chat/` (the upstream's chat dialect), not on the
 * Anthropic API: no other API imports `api/anthropic/`, and `api/chat/` imports no API. (The
 * Responses API shares the OpenAI error envelope of `api/openai/`: both are OpenAI's.)
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const API = resolve(import.meta.dir, "../../../src/api");
const APIS = ["anthropic", "openai", "responses", "ollama"];

function files(dir: string): string[] {
  return readdirSync(join(API, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** The folder under `src/api` each relative import of `file` lands in. */
function importedFolders(file: string): string[] {
  const text = readFileSync(join(API, file), "utf8");
  return [...text.matchAll(/^import[^"']*["'](\.[^"']+)["']/gm)].map((m) => {
    const target = relative(API, resolve(dirname(join(API, file)), m[1]!));
    return target.split("/")[0]!;
  });
}

describe("the translated APIs stand on api/chat", () => {
  test.each(
    APIS.filter((a) => a !== "anthropic"),
  )("api/%s imports nothing of api/anthropic", (folder) => {
    for (const file of files(folder)) {
      const found = importedFolders(file).filter((f) => f === "anthropic");
      expect({ file, found }).toEqual({ file, found: [] });
    }
  });

  test("api/chat imports no API", () => {
    for (const file of files("chat")) {
      const found = importedFolders(file).filter((f) => APIS.includes(f));
      expect({ file, found }).toEqual({ file, found: [] });
    }
  });
});
