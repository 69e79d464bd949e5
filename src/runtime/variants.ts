import {
  contextSize,
  isPortFreeOnLoopback,
  MAX_CTX,
  MIN_CTX,
  mintVariant,
  modelPath,
} from "../config/index.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { estimateVramGb, mergeSplit, readGgufFile, splitParts } from "../gpu/gguf/index.ts";
import type { ModelState } from "../scheduler/types.ts";
import { QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";

/** At most this many `?ctx=` variants exist at once: each is a model process of its own. */
export const MAX_VARIANTS = 32;

/** What the variants see of the models' processes (the runtime's scheduler). */
export interface LiveModels {
  state(id: string): ModelState;
  /** Stops a model once its requests have drained (`Runtime.unload`); a leased one stays. */
  unload(id: string): void;
}

/** Before the runtime wires its own: every model stopped, nothing to unload. */
const NOTHING_LIVE: LiveModels = { state: () => "stopped", unload: () => {} };

/** Up, in the order a request prefers them: serving now, then loading, then a wake away. */
const UP: readonly ModelState[] = ["ready", "starting", "sleeping"];

/**
 * `model?ctx=N`: what serves a model at a context size — the base or a running variant at
 * least as large, else a variant at N rounded up to the model's `ctx_step`, minted once per
 * size with `--ctx-size` on a port of its own, re-sized from its GGUF header so budgets stay
 * honest. Starting one unloads the model's other live variants unless the group's swap or a
 * budget decides. See design.md, "Context variants".
 */
export class Variants {
  private readonly minting = new Map<string, Promise<ModelConfig>>();
  private nextPort: number;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly register: (model: ModelConfig) => void,
    private readonly isPortFree: (port: number) => boolean = isPortFreeOnLoopback,
    private readonly live: LiveModels = NOTHING_LIVE,
  ) {
    const taken = Object.values(config.models).map((m) => m.port ?? 0);
    this.nextPort = Math.max(config.server.startPort, ...taken) + 1;
  }

  get(base: ModelConfig, ctx: number): Promise<ModelConfig> {
    if (base.variantOf) {
      throw new QmError(
        "bad_request",
        `"${base.id}" is already a variant; ask for "${base.variantOf.base}?ctx=${ctx}"`,
        { param: "model" },
      );
    }
    if (!Number.isInteger(ctx) || ctx < MIN_CTX || ctx > MAX_CTX) {
      throw new QmError(
        "bad_request",
        `ctx must be a whole number from ${MIN_CTX} to ${MAX_CTX}, got ${ctx}`,
        { param: "model" },
      );
    }
    const need = Math.min(MAX_CTX, Math.ceil(ctx / base.ctxStep) * base.ctxStep);
    const up = this.runningAtLeast(base, need);
    if (up) return Promise.resolve(up);
    const baseCtx = contextSize(base.argv);
    const id = `${base.id}?ctx=${need}`;
    const chosen = baseCtx !== null && baseCtx >= need ? base : this.config.models[id];
    if (chosen) {
      this.retireOthers(base, chosen);
      return Promise.resolve(chosen);
    }
    let pending = this.minting.get(id);
    if (!pending) {
      if (this.minting.size + this.variantsOf(null).length >= MAX_VARIANTS) {
        throw new QmError(
          "bad_request",
          `too many ?ctx= variants (at most ${MAX_VARIANTS}); restart qm or use fewer sizes`,
          { param: "model" },
        );
      }
      pending = this.mint(base, need)
        .then((variant) => {
          this.retireOthers(base, variant);
          return variant;
        })
        .finally(() => this.minting.delete(id));
      this.minting.set(id, pending);
    }
    return pending;
  }

  /** The base's minted variants (every model's, for null). */
  private variantsOf(base: string | null): ModelConfig[] {
    return Object.values(this.config.models).filter(
      (m) => m.variantOf && (base === null || m.variantOf.base === base),
    );
  }

  /**
   * The base or one of its variants, up and with at least `need` of context: ready before
   * starting before sleeping, then the smallest context (the base first on a tie).
   */
  private runningAtLeast(base: ModelConfig, need: number): ModelConfig | undefined {
    let best: { model: ModelConfig; rank: number; ctx: number } | undefined;
    const baseCtx = contextSize(base.argv);
    const candidates: [ModelConfig, number | null][] = [
      [base, baseCtx],
      ...this.variantsOf(base.id).map((v): [ModelConfig, number] => [v, v.variantOf!.ctx]),
    ];
    for (const [model, ctx] of candidates) {
      if (ctx === null || ctx < need) continue;
      const rank = UP.indexOf(this.live.state(model.id));
      if (rank < 0) continue;
      if (!best || rank < best.rank || (rank === best.rank && ctx < best.ctx)) {
        best = { model, rank, ctx };
      }
    }
    return best?.model;
  }

  /**
   * `chosen` is about to be started (or woken): the base's other variants that are up go,
   * so one model does not hold several copies of its weights — unless the group policy's
   * swap evicts them with the start anyway (honouring holds), or a budget admits by size.
   * One still starting is left: unloading it would fail its waiters.
   */
  private retireOthers(base: ModelConfig, chosen: ModelConfig): void {
    const group = this.config.groups[base.group];
    if (this.config.router.policy === "group" && group?.swap) return;
    const budgeted =
      this.config.resources.vramBudgetGb > 0 || (this.config.resources.gpus ?? []).length > 0;
    if (budgeted && chosen.estVramGb > 0) return;
    for (const v of this.variantsOf(base.id)) {
      if (v.id === chosen.id) continue;
      const state = this.live.state(v.id);
      if (state !== "ready" && state !== "sleeping") continue;
      this.log.info(`unloading ${v.id}: ${chosen.id} serves ${base.id} at its context now`);
      this.live.unload(v.id);
    }
  }

  private async mint(base: ModelConfig, ctx: number): Promise<ModelConfig> {
    const estVramGb = await this.estimate(base, ctx);
    const variant = mintVariant(base, { ctx, port: this.allocatePort(), estVramGb });
    this.register(variant);
    this.log.info(
      `minted ${variant.id}: ${estVramGb > 0 ? `est_vram_gb ${estVramGb}` : "VRAM estimate unknown"}, port ${variant.port}`,
    );
    return variant;
  }

  private allocatePort(): number {
    for (let port = this.nextPort; port <= 65535; port++) {
      if (this.isPortFree(port)) {
        this.nextPort = port + 1;
        return port;
      }
    }
    throw new QmError("internal", "no free port left for a ?ctx= variant");
  }

  /** The GGUF-based estimate at `ctx`, or 0 (unknown) when the model file cannot be read. */
  private async estimate(base: ModelConfig, ctx: number): Promise<number> {
    const path = modelPath(base.argv);
    if (!path) return 0;
    const reads = await Promise.all(splitParts(path).map((p) => readGgufFile(p)));
    const failed = reads.find((r) => !r.ok);
    if (failed && !failed.ok) {
      this.log.warn(`cannot size ${base.id}?ctx=${ctx} from ${path}: ${failed.reason}`);
      return 0;
    }
    const headers = reads.map((r) => (r.ok ? r.header : null)!);
    const merged =
      headers.length > 1 ? mergeSplit(headers) : { ok: true as const, model: headers[0]! };
    if (!merged.ok) {
      this.log.warn(`cannot size ${base.id}?ctx=${ctx}: ${merged.reason}`);
      return 0;
    }
    return estimateVramGb(merged.model, ctx);
  }
}
