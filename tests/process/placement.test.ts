/** A start placed on cards: `CUDA_VISIBLE_DEVICES` and `${GPU_IDS}` reach the process. */
import { afterEach, expect, test } from "bun:test";
import { ModelProcess } from "../../src/process/model-process.ts";
import { liveGroups } from "../../src/process/process-group.ts";
import { demoModel } from "../support/demo-model.ts";
import { captureLogger } from "./support.ts";

// biome-ignore lint/suspicious/noTemplateCurlyInString: qm's macro, not JS.
const GPU_IDS = "${GPU_IDS}";
const made: ModelProcess[] = [];

afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.stop()));
  expect(liveGroups()).toEqual([]);
});

function supervise(id: string) {
  const cap = captureLogger();
  const proc = new ModelProcess(demoModel(id, ["--name", `${id}-${GPU_IDS}`]), {
    healthCheckTimeoutS: 10,
    log: cap.log,
    onExit: () => {},
  });
  made.push(proc);
  return proc;
}

test("the cards a start is placed on: CUDA_VISIBLE_DEVICES and GPU_IDS, kept while it runs", async () => {
  const proc = supervise("placed");
  await proc.start({ gpus: [1, 3] });
  expect(proc.logs()).toContain("demo-upstream placed-1,3: CUDA_VISIBLE_DEVICES=1,3");
  expect(proc.placement).toEqual([1, 3]);
  await proc.stop();
  expect(proc.placement).toBeUndefined();
});

test("no placement: CUDA_VISIBLE_DEVICES as qm's environment has it, GPU_IDS reads 0", async () => {
  const proc = supervise("box");
  await proc.start();
  const inherited = process.env.CUDA_VISIBLE_DEVICES;
  const lines = proc.logs().join("\n");
  if (inherited === undefined) expect(lines).not.toContain("CUDA_VISIBLE_DEVICES=");
  else expect(lines).toContain(`CUDA_VISIBLE_DEVICES=${inherited}`);
  expect(lines).toContain("demo-upstream box-0");
});
