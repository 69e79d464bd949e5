/**
 * The compiled binary, for the tests that run it. Each such file starts with
 *
 *     beforeAll(needsBinary, BUILD_TIMEOUT_MS);
 *
 * and no other test pays for a build: `bun test tests/scheduler` never compiles anything.
 * `tests/binary.test.ts` fails on a file that runs dist/qm without that line.
 */
import { binaryIsStale, buildQm } from "../../scripts/build.ts";
import { QM } from "./qm-process.ts";

/** A build takes about a second on a quiet box; a loaded one may take many times that. */
export const BUILD_TIMEOUT_MS = 120_000;

let ready: Promise<string> | undefined;

/**
 * Resolves to the path of a dist/qm built from the current sources, building it first when it is
 * missing or older than src/. Once per process: every later call (another file of the same
 * `bun test` run, or one that comes in while the build is running) gets the same promise, so a
 * failed build fails each file that needs it with the same error instead of retrying. Two
 * `bun test` processes may both build; each writes its own file and renames it into place
 * (scripts/build.ts), so neither sees half a binary.
 */
export function needsBinary(): Promise<string> {
  ready ??= (async () => {
    if (binaryIsStale()) await buildQm();
    return QM;
  })();
  return ready;
}
