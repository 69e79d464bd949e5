import { isPortFreeOnLoopback, MAX_CTX, MIN_CTX, mintVariant, modelPath } from "../config/index.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { estimateVramGb, mergeSplit, readGgufFile, splitParts } from "../gpu/gguf/index.ts";
import { QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";

/** At most this many `?ctx=` variants exist at once: each is a model process of its own. */
export const MAX_VARIANTS = 32;

/**
 * `model?ctx=N`: mints, once per (model, N), a variant of a configured model that runs with
 * `--ctx-size N` on a port of its own, re-sized from its GGUF header so budgets stay honest.
 */
export class Variants {
  private readonly minting = new Map<string, Promise<ModelConfig>>();
  private nextPort: number;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly register: (model: ModelConfig) => void,
    private readonly isPortFree: (port: number) => boolean = isPortFreeOnLoopback,
  ) {
    const taken = Object.values(config.models).map((m) => m.port ?? 0);
    this.nextPort = Math.max(config.server.startPort, ...taken) + 1;
  }

  get(base: ModelConfig, ctx: number): Promise<ModelConfig> {
    if (base.variantOf) {
      throw new QmError(
        "bad_request",
        `"${base.id}" is already a variant; ask for "${base.variantOf.base}?ctx=${ctx}"`,
        {
          param: "model",
        },
      );
    }
    if (!Number.isInteger(ctx) || ctx < MIN_CTX || ctx > MAX_CTX) {
      throw new QmError(
        "bad_request",
        `ctx must be a whole number from ${MIN_CTX} to ${MAX_CTX}, got ${ctx}`,
        {
          param: "model",
        },
      );
    }
    const id = `${base.id}?ctx=${ctx}`;
    const existing = this.config.models[id];
    if (existing) return Promise.resolve(existing);
    let pending = this.minting.get(id);
    if (!pending) {
      if (this.minting.size + this.count() >= MAX_VARIANTS) {
        throw new QmError(
          "bad_request",
          `too many ?ctx= variants (at most ${MAX_VARIANTS}); restart qm or use fewer sizes`,
          {
            param: "model",
          },
        );
      }
      pending = this.mint(base, ctx).finally(() => this.minting.delete(id));
      this.minting.set(id, pending);
    }
    return pending;
  }

  private count(): number {
    return Object.values(this.config.models).filter((m) => m.variantOf).length;
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
