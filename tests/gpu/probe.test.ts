import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { probeGpu } from "../../src/gpu/probe.ts";
import { treeFromChildren } from "../../src/gpu/process-tree.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { SMI_FIXTURES } from "./fixtures.ts";

let root: string;
let n = 0;

/**
 * A fake nvidia-smi: prints a recorded output per query and exits with the given code.
 * It insists on the format flags so a probe that forgot them fails here.
 */
async function fakeSmi(
  gpu: string,
  apps: string,
  opts: { gpuExit?: number; appsExit?: number; body?: string } = {},
): Promise<string> {
  const dir = join(root, String(n++));
  await mkdir(dir);
  const script = join(dir, "nvidia-smi");
  const body =
    opts.body ??
    `echo "$@" >> "${dir}/args"
case "$*" in *--format=csv,noheader,nounits*) ;; *) echo "Invalid combination of input arguments."; exit 2;; esac
case "$*" in
  *--query-gpu=index,uuid,name,memory.total,memory.used,memory.free*) cat "${join(SMI_FIXTURES, gpu)}"; exit ${opts.gpuExit ?? 0};;
  *--query-compute-apps=pid,gpu_uuid,used_memory*) cat "${join(SMI_FIXTURES, apps)}"; exit ${opts.appsExit ?? 0};;
esac
exit 2`;
  await writeFile(script, `#!/bin/sh\n${body}\n`);
  await chmod(script, 0o755);
  return script;
}

const noTree = treeFromChildren(() => []);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "qm-probe-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("probeGpu", () => {
  test("a trusted reading, with qm's model found through its process tree", async () => {
    const command = await fakeSmi("gpu-rtx4090-r550.txt", "apps-rtx4090-r550.txt");
    // qm started 48000 (a wrapper); the CUDA context belongs to its child 48213.
    const processTree = treeFromChildren((pid) => (pid === 48000 ? [48213] : []));
    const r = await probeGpu({ command, ourPids: [48000], processTree });
    expect(r).toMatchObject({
      ok: true,
      reading: { oursGb: 12838 / 1024, foreignGb: (18234 - 12838) / 1024, ourPidsOnGpu: [48213] },
    });
  });

  test("a starting model's tree counts as ours without being required on the GPU", async () => {
    const command = await fakeSmi("gpu-rtx4090-r550.txt", "apps-rtx4090-r550.txt");
    const processTree = treeFromChildren((pid) => (pid === 48000 ? [48213] : []));
    const r = await probeGpu({ command, transientPids: [48000], processTree });
    expect(r).toMatchObject({ ok: true, reading: { oursGb: 12838 / 1024, ourPidsOnGpu: [48213] } });
    // Not yet on the GPU (and no ready model): still a trusted reading, all of it foreign.
    const none = await fakeSmi("gpu-rtx4090-r550.txt", "apps-none.txt");
    const early = await probeGpu({ command: none, transientPids: [48000], processTree });
    expect(early).toMatchObject({ ok: true, reading: { oursGb: 0, foreignGb: 18234 / 1024 } });
  });

  test("the configured command keeps its own arguments, before the query", async () => {
    const script = await fakeSmi("gpu-rtx4090-r550.txt", "apps-none.txt");
    const r = await probeGpu({ command: `${script} --id=0`, processTree: noTree });
    expect(r).toMatchObject({ ok: true, reading: { foreignGb: 18234 / 1024 } });
    const args = await readFile(join(script, "../args"), "utf8");
    expect(args.split("\n").filter(Boolean).sort()).toEqual([
      "--id=0 --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits",
      "--id=0 --query-gpu=index,uuid,name,memory.total,memory.used,memory.free --format=csv,noheader,nounits",
    ]);
  });

  test('"off" disables it', async () => {
    expect(await probeGpu({ command: "off" })).toEqual({
      ok: false,
      reason: "GPU probe off (resources.gpu_probe): static budget applies",
    });
  });

  test("no such command", async () => {
    expect(await probeGpu({ command: join(root, "nope/nvidia-smi"), processTree: noTree })).toEqual(
      {
        ok: false,
        kind: "none",
        reason: "nvidia-smi not found: static budget applies",
      },
    );
  });

  test("a file that cannot be executed", async () => {
    const path = join(root, "not-executable");
    await writeFile(path, "#!/bin/sh\n");
    const r = await probeGpu({ command: path, processTree: noTree });
    expect(r).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^cannot run not-executable: .*static budget applies$/),
    });
  });

  test("a hung nvidia-smi is killed at its deadline, not before", async () => {
    const command = await fakeSmi("", "", { body: "exec sleep 30" });
    const timers = new FakeTimers();
    let settled = false;
    const probing = probeGpu({ command, timeoutMs: 100, processTree: noTree, timers }).then((r) => {
      settled = true;
      return r;
    });
    // Both queries run, each with its deadline armed on the fake clock.
    expect(timers.pending).toBe(2);
    timers.advance(99);
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    timers.advance(1);
    expect(await probing).toEqual({
      ok: false,
      reason: "nvidia-smi did not answer within 0.1 s: static budget applies",
    });
    expect(timers.pending).toBe(0);
  });

  test("driver failures are told in words", async () => {
    const command = await fakeSmi("driver-failed.txt", "driver-failed.txt", {
      gpuExit: 9,
      appsExit: 9,
    });
    expect(await probeGpu({ command, processTree: noTree })).toEqual({
      ok: false,
      kind: "nvidia",
      reason:
        "nvidia-smi cannot talk to the NVIDIA driver (not loaded, or not installed): static budget applies",
    });
    const none = await fakeSmi("no-devices.txt", "no-devices.txt", { gpuExit: 6, appsExit: 6 });
    // The tool is there, the card is not: "none", so "auto" looks for other GPUs.
    expect(await probeGpu({ command: none, processTree: noTree })).toEqual({
      ok: false,
      kind: "none",
      reason: "nvidia-smi found no GPU: static budget applies",
    });
  });

  test("an unexplained failure is told by its exit code (nvidia-smi(1) RETURN VALUE)", async () => {
    const command = await fakeSmi("apps-none.txt", "apps-none.txt", { gpuExit: 15 });
    expect(await probeGpu({ command, processTree: noTree })).toEqual({
      ok: false,
      kind: "nvidia",
      reason: "nvidia-smi exited 15: a GPU fell off the bus: static budget applies",
    });
  });

  test("WSL: fine while qm is idle, untrusted once a model of ours should be on the GPU", async () => {
    const command = await fakeSmi("gpu-rtx3080-wsl.txt", "apps-wddm-na.txt");
    expect(await probeGpu({ command, processTree: noTree })).toMatchObject({
      ok: true,
      reading: { foreignGb: 2113 / 1024 },
    });
    const busy = await probeGpu({
      command,
      ourPids: [2936],
      processTree: treeFromChildren(() => []),
    });
    // Our process is listed, its memory not: nothing to attribute by change either.
    expect(busy).toEqual({
      ok: false,
      kind: "nvidia",
      reason: "per-process memory not reported by this driver (WDDM/WSL?): static budget applies",
    });
  });

  test("garbage in either answer", async () => {
    const command = await fakeSmi("gpu-rtx4090-r550.txt", "apps-garbage.txt");
    expect(await probeGpu({ command, processTree: noTree })).toEqual({
      ok: false,
      kind: "nvidia",
      reason:
        'nvidia-smi output not understood: "Segmentation fault (core dumped)": static budget applies',
    });
  });
});
