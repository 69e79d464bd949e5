/**
 * `npm test`: the whole check, one stage after another (type-check, lint, build dist/qm, the
 * test suite, a smoke run of dist/qm), stopping at the first that fails. Each stage's output
 * passes through untouched (.ci/run reads Bun's " N pass" / " N fail" lines); at the end comes
 * each stage's time and the total, to compare with the figures in CONTRIBUTING.md.
 */
export const STAGES: [name: string, args: string[]][] = [
  ["typecheck", ["run", "typecheck"]],
  ["lint", ["run", "lint"]],
  ["build", ["run", "build"]],
  ["tests", ["test"]],
  ["smoke", ["run", "smoke"]],
];

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const took: string[] = [];
const began = performance.now();
let failed: { stage: string; code: number } | null = null;

for (const [stage, args] of STAGES) {
  const start = performance.now();
  const proc = Bun.spawn([process.execPath, ...args], { stdio: ["inherit", "inherit", "inherit"] });
  const code = await proc.exited;
  took.push(`${stage} ${seconds(performance.now() - start)}`);
  if (code !== 0) {
    failed = { stage, code };
    break;
  }
}

const summary = `${took.join(", ")}; total ${seconds(performance.now() - began)}`;
if (failed) {
  process.stderr.write(`\nnpm test: ${failed.stage} failed (exit ${failed.code}) — ${summary}\n`);
  process.exit(failed.code);
}
process.stderr.write(`\nnpm test: ${summary}\n`);
