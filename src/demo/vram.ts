/**
 * `--vram-mb N [--vram-device I]`: the demo model holds N MiB of GPU memory for its life, so
 * qm's GPU probe, live ceiling and spawn guard can be tried against a model whose memory is
 * known. Real memory through the NVIDIA driver (./cuda.ts); or, with `QM_DEMO_VRAM_DIR` set,
 * simulated: a file `DIR/<pid>.json` (`{"mib", "card"}`) that `qm demo-smi` reads as
 * nvidia-smi would report the memory (and removes once it is let go of: `goneAt`). Either is
 * let go of when the process ends.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { holdDeviceMemory } from "./cuda.ts";

/** Where simulated holders write themselves down (see `qm demo-smi`). */
export const SIM_DIR_ENV = "QM_DEMO_VRAM_DIR";

/**
 * What a simulated holder writes: its MiB and the card index it holds them on; `goneAt` (ms
 * since the epoch) once it let go, from when `qm demo-smi` may play a driver that reclaims late.
 */
export interface SimHold {
  mib: number;
  card: number;
  goneAt?: number;
}

export interface VramHold {
  /** "simulated" or "real", for the log line. */
  kind: "real" | "simulated";
  /** The card index (simulated: among all cards; real: the visible device). */
  card: number;
  release(): void;
}

/**
 * The card a process placed with `CUDA_VISIBLE_DEVICES=a,b,…` means by its device `i`: the
 * i-th listed (what the driver does); the device itself when the variable is unset or not a
 * list of indexes.
 */
export function visibleCard(device: number, visible: string | undefined): number {
  if (visible === undefined || visible.trim() === "") return device;
  const ids = visible.split(",").map((s) => s.trim());
  const id = ids[device];
  return id !== undefined && /^\d+$/.test(id) ? Number(id) : device;
}

/** Holds the memory now; throws (naming libcuda.so.1 for real memory) when it cannot. */
export function holdVram(mib: number, device: number, env = process.env): VramHold {
  const dir = env[SIM_DIR_ENV];
  if (dir) {
    const card = visibleCard(device, env.CUDA_VISIBLE_DEVICES);
    const file = join(dir, `${process.pid}.json`);
    writeFileSync(file, JSON.stringify({ mib, card } satisfies SimHold));
    let held = true;
    return {
      kind: "simulated",
      card,
      release() {
        if (held) writeFileSync(file, JSON.stringify({ mib, card, goneAt: Date.now() }));
        held = false;
      },
    };
  }
  const memory = holdDeviceMemory(mib, device);
  return { kind: "real", card: device, release: () => memory.free() };
}
