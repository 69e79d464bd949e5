import pkg from "../package.json" with { type: "json" };

// Stamped by `bun build --define` (scripts/release/build-args.ts); a run from source has neither.
declare const QM_BUILD_COMMIT: string | undefined;
declare const QM_BUILD_DATE: string | undefined;

export const VERSION: string = pkg.version;
/** The short SHA qm was built from, or "unknown" (run from source, or built outside git). */
export const COMMIT: string = typeof QM_BUILD_COMMIT === "string" ? QM_BUILD_COMMIT : "unknown";
/** The build's date, YYYY-MM-DD, or "unknown". */
export const BUILT: string = typeof QM_BUILD_DATE === "string" ? QM_BUILD_DATE : "unknown";

/** What `qm version` prints: `qm 0.1.0 (commit 1a2b3c4, built 2026-12-04; bun 1.4.5)`. */
export function versionLine(bunVersion: string = Bun.version): string {
  return `qm ${VERSION} (commit ${COMMIT}, built ${BUILT}; bun ${bunVersion})`;
}
