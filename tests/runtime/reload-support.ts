/** A runtime for reload tests (tests/runtime/harness.ts) whose config a test rewrites. */
import { HEAD, runtimeHarness } from "./harness.ts";

export { HEAD, model } from "./harness.ts";

export function setup(...models: string[]) {
  return setupWith("", ...models);
}

/** `head`: tables before the models (e.g. `[server]`), kept across reloads. */
export function setupWith(head: string, ...models: string[]) {
  const top = head + HEAD;
  const t = runtimeHarness(top + models.join("\n"));
  return {
    ...t,
    /** Rewrites the models "on disk" (the head kept) and reloads. */
    reload: (...next: string[]) => t.reloadText(top + next.join("\n")),
  };
}
