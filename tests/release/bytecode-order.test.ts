/**
 * The run that records the order qm's bytecode is laid out in (scripts/release/bytecode-order.ts):
 * qm serve and the demo model server it starts each leave a record, and the folder goes after.
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { recordOrder } from "../../scripts/release/bytecode-order.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { QM } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

test("a run of qm serve and of its demo model server each leaves a record", async () => {
  const recorded = await recordOrder(QM);
  try {
    expect(recorded.files.map((f) => basename(f))).toEqual(["serve.order", "demo.order"]);
    for (const f of recorded.files) {
      // The format's line, then one line per function, module or constant first used.
      const lines = readFileSync(f, "utf8").split("\n");
      expect(lines[0]).toMatch(/^v\d+$/);
      expect(lines.filter((l) => /^[A-Z] [0-9a-f]{16}$/.test(l)).length).toBeGreaterThan(1000);
    }
  } finally {
    recorded.dispose();
  }
  for (const f of recorded.files) expect(existsSync(f)).toBe(false);
}, 30_000);

test("a run that fails records nothing and says why, without throwing", async () => {
  const recorded = await recordOrder("/bin/false");
  try {
    expect(recorded.files).toEqual([]);
    expect(recorded.failed).toContain("exited with 1 before listening");
  } finally {
    recorded.dispose();
  }
});
