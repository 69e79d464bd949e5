/**
 * The dashboard's script and styles, built into qm's own code by a Bun macro: the server imports
 * these functions `with { type: "macro" }`, so they run when qm's sources are transpiled — by
 * `bun build --compile` for `dist/qm`, by Bun itself when qm runs from source or under
 * `bun test` — and what they return is inlined as a string literal. No file is read at run time
 * and nothing is fetched from elsewhere: the dashboard works offline from the single binary.
 *
 * `Bun.build` cannot be called inside a macro, so the bundler runs as a child process.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

const APP = join(import.meta.dir, "app");

/** The browser app (`app/main.tsx` and what it imports), one minified ES module. */
export function appScript(): string {
  const built = Bun.spawnSync(
    [
      process.execPath,
      "build",
      join(APP, "main.tsx"),
      "--target=browser",
      "--format=esm",
      "--minify",
      "--jsx-import-source=preact",
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (built.exitCode !== 0) {
    throw new Error(`the dashboard's script did not build:\n${built.stderr.toString()}`);
  }
  return built.stdout.toString();
}

/** The dashboard's style sheet, as written. */
export function appStyles(): string {
  return readFileSync(join(APP, "app.css"), "utf8");
}
