/**
 * `qm selftest` from the compiled binary: the GPU scenarios on demo models with simulated
 * memory pass on any box, with a verdict per check; `qm selftest gpu` on a box without the
 * NVIDIA driver stops at the `driver` check, naming libcuda.so.1 (the bun:ffi path inside the
 * binary).
 */
import { beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { cudaAvailable } from "../../src/demo/cuda.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { QM } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);
// Four scenarios of real processes, two of which wait out the 5 s a release may take.
setDefaultTimeout(180_000);

async function run(...args: string[]) {
  const p = Bun.spawn([QM, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [code, out, err] = await Promise.all([
    p.exited,
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
  ]);
  return { code, out, err };
}

test("qm selftest --json: every scenario passes on simulated memory", async () => {
  const { code, out, err } = await run("selftest", "--json");
  const report = JSON.parse(out) as {
    ok: boolean;
    checks: { name: string; ok: boolean; detail: string }[];
  };
  expect({ failed: report.checks.filter((c) => !c.ok), err }).toEqual({ failed: [], err: "" });
  expect(report.ok).toBe(true);
  expect(code).toBe(0);
  expect(report.checks.map((c) => c.name)).toEqual([
    "probe",
    "pids",
    "co-residence",
    "foreign",
    "estimate",
    "spawn-guard",
    "by-change",
    "placement",
  ]);
  for (const c of report.checks) expect(Object.keys(c).sort()).toEqual(["detail", "name", "ok"]);
  expect(report.checks.find((c) => c.name === "by-change")?.detail).toContain(
    "attribution by_change",
  );
});

test.skipIf(cudaAvailable())(
  "qm selftest gpu without the NVIDIA driver: exit 1, the driver check only",
  async () => {
    const { code, out } = await run("selftest", "gpu", "--json");
    expect(code).toBe(1);
    const report = JSON.parse(out);
    expect(report).toEqual({
      ok: false,
      checks: [{ name: "driver", ok: false, detail: expect.stringContaining("libcuda.so.1") }],
    });
    const text = await run("selftest", "gpu");
    expect(text.code).toBe(1);
    expect(text.out).toStartWith("✗ driver: ");
  },
);

test("usage: an unknown word is exit 2", async () => {
  const { code, err } = await run("selftest", "cpu");
  expect(code).toBe(2);
  expect(err).toContain('selftest takes "gpu" or nothing');
});
