/**
 * How many upstream requests qm may have in flight at once. Bun's `fetch` lets 256 run at a
 * time, process-wide, and queues the rest inside its HTTP client, where nothing in qm sees them:
 * the 257th concurrent stream waited for one of the first 256 to end, its model idle, its
 * client told nothing, while the scheduler counted it as served; a health probe or a peer's
 * status call queued behind a full house the same way. qm's own limits (the keys'
 * `max_concurrency`, a model's slots, the queue) are where concurrency is decided, so Bun's
 * must not bind first.
 *
 * Bun reads the limit once, from `BUN_CONFIG_MAX_HTTP_REQUESTS` in the environment, as the
 * runtime starts; nothing changes it later (not `process.env`, not libc's setenv). So `qm serve`
 * started without the variable replaces itself before it does anything else — the same
 * program, command line and pid (execve), the variable set to Bun's largest value — and the
 * run that follows finds it set and goes on. A variable the user set is kept as it is.
 */
import { type Platform, platform } from "../platform/index.ts";

export const FETCH_LIMIT_VAR = "BUN_CONFIG_MAX_HTTP_REQUESTS";
/** Bun's largest (it reads a 16-bit number): in effect, no limit of Bun's own. */
export const FETCH_LIMIT = 65_535;
/** Bun's limit when the variable is not set. */
export const BUN_DEFAULT_FETCH_LIMIT = 256;

/**
 * Called first thing by `qm serve`. Where the variable is unset, runs qm again with it set and
 * does not return; where that cannot be done, returns the warning `qm serve` logs (null when
 * there is nothing to say).
 */
export function raiseFetchLimit(
  env: Readonly<Record<string, string | undefined>> = process.env,
  p: Pick<Platform, "execSelf"> = platform,
): string | null {
  if (env[FETCH_LIMIT_VAR] !== undefined) return null;
  const why = p.execSelf({ [FETCH_LIMIT_VAR]: String(FETCH_LIMIT) });
  return (
    `at most ${BUN_DEFAULT_FETCH_LIMIT} upstream requests can be in flight at once, the rest ` +
    `wait (the runtime's default; qm could not start itself with more: ${why}); ` +
    `set ${FETCH_LIMIT_VAR}=${FETCH_LIMIT} in qm's environment to lift it`
  );
}
