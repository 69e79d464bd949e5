/**
 * Each model's GGUF file (`-m`/`--model` in its cmd): readable, and its VRAM estimate (weights
 * + KV cache at the cmd's context size, src/gpu/gguf/estimate.ts) against the budget —
 * `resources.vram_budget_gb`, else what the GPU probe reports in total. A model that can never
 * fit fails; one with no budget to compare against passes with its estimate.
 */
import { modelPath } from "../../config/index.ts";
import type { Config, ModelConfig } from "../../config/types.ts";
import { sizeModel } from "../../gpu/gguf/estimate.ts";
import { fmtGb } from "../../gpu/units.ts";
import { type DoctorCheck, type DoctorContext, type Finding, fail, note, pass } from "./check.ts";

/** The value after the first of `flags` (`--flag N` or `--flag=N`), as a whole number. */
function intFlag(argv: readonly string[], flags: readonly string[]): number | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const [flag, inline] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, argv[i + 1]];
    if (!flags.includes(flag)) continue;
    return inline !== undefined && /^\d+$/.test(inline) ? Number(inline) : undefined;
  }
  return undefined;
}

/** The budget a model is held to, in GB, and where it comes from; null when there is none. */
async function budgetFor(
  m: ModelConfig,
  config: Config,
  ctx: DoctorContext,
): Promise<{ gb: number; source: string } | null> {
  if (config.groups[m.group]?.pool === "ram") {
    const ram = config.resources.ramBudgetGb;
    return ram > 0 ? { gb: ram, source: "resources.ram_budget_gb" } : null;
  }
  const vram = config.resources.vramBudgetGb;
  if (vram > 0) return { gb: vram, source: "resources.vram_budget_gb" };
  const gpu = await ctx.gpu();
  return gpu.ok ? { gb: gpu.reading.totalGb, source: "the GPUs' memory" } : null;
}

async function checkModel(m: ModelConfig, config: Config, ctx: DoctorContext): Promise<Finding> {
  const path = modelPath(m.argv)!;
  const name = `gguf ${m.id}`;
  const read = await ctx.deps.readModel(path);
  if (!read.ok) {
    return fail(name, `${path}: ${read.reason}`, `check the path after -m in models.${m.id}.cmd`);
  }
  const ctxSize = intFlag(m.argv, ["--ctx-size", "-c", "--ctx_size"]);
  const layers = intFlag(m.argv, ["-ngl", "--n-gpu-layers", "--gpu-layers"]);
  const est = sizeModel(read.model, {
    ...(ctxSize === undefined ? {} : { ctx: ctxSize }),
    ...(layers === undefined ? {} : { gpuLayers: layers }),
  });
  const what = `${path}: needs about ${fmtGb(est.gb)} GB at ctx ${est.ctx}`;
  const budget = await budgetFor(m, config, ctx);
  if (budget === null) return pass(name, `${what} (no budget to compare with)`);
  if (est.gb > budget.gb) {
    return fail(
      name,
      `${what}, more than ${budget.source} (${fmtGb(budget.gb)} GB)`,
      "a smaller quantisation or --ctx-size, fewer -ngl layers, or a larger budget",
    );
  }
  const within = `${what}, within ${budget.source} (${fmtGb(budget.gb)} GB)`;
  if (m.estVramGb > 0 && m.estVramGb < est.gb) {
    return note(
      name,
      `${within}; est_vram_gb = ${fmtGb(m.estVramGb)} is below it, so the budget may admit it where it does not fit`,
    );
  }
  return pass(name, within);
}

export const ggufCheck: DoctorCheck = {
  id: "gguf",
  async run(ctx) {
    const config = ctx.config;
    if (!config) return [];
    const models = Object.values(config.models).filter(
      (m) => !m.node && m.argv.length > 0 && modelPath(m.argv) !== null,
    );
    return Promise.all(models.map((m) => checkModel(m, config, ctx)));
  },
};
