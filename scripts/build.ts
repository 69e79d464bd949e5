// `npm run build`: compiles dist/qm for this machine, stamped with the commit and date that
// `qm version` prints (scripts/release/build-args.ts). `npm run release` builds every target.
import { resolve } from "node:path";
import { buildArgs, buildStamp } from "./release/build-args.ts";

const root = resolve(import.meta.dir, "..");
const out = process.argv[2] ?? "dist/qm";
const build = Bun.spawnSync([process.execPath, ...buildArgs(buildStamp({ cwd: root }), out)], {
  cwd: root,
  stdout: "inherit",
  stderr: "inherit",
});
process.exit(build.exitCode ?? 1);
