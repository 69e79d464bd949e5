/**
 * Every command the user docs give works on a fresh box, where Bun exists only inside
 * node_modules: no bare `bun …` (it is `npm run …` or `npx bun …`), and every `npm run NAME` is
 * a script in package.json.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { ROOT } from "../support/qm-process.ts";

const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  ...["docker", "kubernetes", "systemd"].map((d) => `deploy/${d}/README.md`),
  "scripts/llama/README.md",
];

/** Each command line of a document: lines of fenced blocks, and inline code spans. */
function commands(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) {
      fenced = !fenced;
      continue;
    }
    if (fenced) out.push(line.trim());
    else for (const m of line.matchAll(/`([^`]+)`/g)) out.push(m[1]!.trim());
  }
  return out;
}

test("the docs call no bare bun, and every npm run script exists", () => {
  const problems: string[] = [];
  for (const file of DOCS) {
    for (const cmd of commands(readFileSync(join(ROOT, file), "utf8"))) {
      // `bun` running something, at the start of a command or after a shell separator.
      if (/(^|[;&|(]\s*)bun\s+(run|test|build|x|install|add|\S+\.[cm]?[jt]s)\b/.test(cmd)) {
        problems.push(`${file}: bare bun: ${cmd}`);
      }
      for (const m of cmd.matchAll(/\bnpm run (?:--silent )?([\w:-]+)/g)) {
        if (!(m[1]! in pkg.scripts)) problems.push(`${file}: no script ${m[1]}: ${cmd}`);
      }
    }
  }
  expect(problems).toEqual([]);
});
