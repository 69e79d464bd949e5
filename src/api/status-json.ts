/**
 * The wire types of `GET /api/status` (docs/api.md): what `qm status`, the dashboard and other
 * qm peers read. Internal code reads the runtime's own state; these are rendered from it
 * (`runtime/status.ts`) only when asked for.
 */
import type { PeerStatusJson } from "../peers/table.ts";
import type { ModelState } from "../scheduler/types.ts";

export interface ModelStatusJson {
  id: string;
  state: ModelState;
  inflight: number;
  leases: number;
  queued: number;
  /**
   * The places in qm's waiting line (1 = next) of the model's queued requests, front first;
   * requests waiting for its load in progress are counted in `queued` but have no place.
   */
  queue_positions: number[];
  /** Wall-clock epoch ms until which the model is held, or null. */
  held_until_ms: number | null;
  /**
   * Why it is held (`hold_policy = "cost"`), e.g. `gap 2.1 s expected, swap 6.3 s`: the tool gap
   * its conversation is expected to take, and what swapping it back would cost. Null when it
   * is not held, or held for `hold_ms` (`"fixed"`).
   */
  held_reason?: string | null;
  /** The same figures, in ms: the typical gap, the hold's window, the swap back. */
  hold?: { gap_ms: number; window_ms: number; swap_ms: number } | null;
  /**
   * How its last hold ended, until its next one: `expired` (`gap spent`, `loop ended`),
   * `preempted` (`patience`) or `dropped` (`cost`, `fairness`); `at_ms` wall-clock epoch ms.
   */
  hold_ended?: { how: string; reason: string; at_ms: number } | null;
  est_vram_gb: number;
  est_ram_gb: number;
  pid: number | null;
  port: number | null;
  aliases: string[];
  group: string;
  ttl_s: number;
  /** The idle time-to-live a request set in place of `ttl_s` (`keep_alive`; -1 = for ever), or null. */
  keep_alive_ms: number | null;
  /** Wall-clock epoch ms at which the idle model will be stopped (its TTL), or null. */
  unload_at_ms: number | null;
  concurrency_limit: number;
  unlisted: boolean;
  last_error: string | null;
  /**
   * The load in progress (null when not loading): ms so far, ms it is expected to take (the
   * median of the model's last loads; null before its first), the fraction done (the larger of
   * the time's and the log stage's; null when neither is known) and the stage.
   */
  load: {
    elapsed_ms: number;
    expected_ms: number | null;
    progress: number | null;
    /** The stage the model's log shows (llama-server: `"loading tensors"`, …), or null. */
    stage: string | null;
  } | null;
  /** How long the model's last load took, in ms; null if it never loaded. */
  last_load_ms: number | null;
  /**
   * While the model waits to load and qm reads its GGUF files into the OS page cache
   * (`prefetch`): the fraction of their bytes read so far, 0 to 1 (1: all of them). Null when
   * no prefetch is planned for it — in particular once it starts loading (`load` then).
   */
  prefetched: number | null;
  /** A config reload changed its process settings: they apply on its next start. */
  restart_pending?: boolean;
  /** The cards it runs on (several GPUs), while it holds memory; absent otherwise. */
  gpus?: number[];
  /** A managed node's model (`kind = "mistralrs"`): the node it runs on; absent otherwise. */
  node?: string;
}

/** One card, with several GPUs (`resources.gpus` or detected). */
export interface CardStatusJson {
  index: number;
  /** Its budget: `resources.gpus`, or the card's memory as nvidia-smi reports it. */
  budget_gb: number;
  /** What admission uses on it now (the budget, tightened by the live reading). */
  ceiling_gb: number;
  /** Estimated use by the models placed on it (a model on n cards: est_vram_gb / n each). */
  used_gb: number;
  /** The models placed on it, holding memory now. */
  models: string[];
  /** The latest trusted nvidia-smi reading of this card, or null. */
  reading: GpuReadingJson | null;
}

/** An nvidia-smi reading, of the box or of one card. */
export interface GpuReadingJson {
  total_gb: number;
  used_gb: number;
  free_gb: number;
  ours_gb: number;
  foreign_gb: number;
}

/** One request waiting for a model (`StatusJson.waiting`). */
export interface WaitingJson {
  key: string;
  model: string;
  waited_ms: number;
  position: number | null;
}

/**
 * A peer's entry; a managed node's (`kind = "mistralrs"`) also says whether it can unload:
 * false once it answered `no_loader_config` (qm then evicts nothing there), true once it
 * unloaded a model or listed one unloaded, null before either.
 */
export type NodePeerStatusJson = PeerStatusJson & { can_unload?: boolean | null };

export interface StatusJson {
  version: string;
  /** The other boxes (`[peers.NAME]`) and what this qm knows of them; absent with none. */
  peers?: NodePeerStatusJson[];
  uptime_s: number;
  models: ModelStatusJson[];
  queue: { depth: number };
  /**
   * The requests waiting for a model, oldest first: who (the key's name), for what, how long so
   * far, and the place in the waiting line (null: waiting for a load in progress, or held back
   * by the key's `max_concurrency`). An admin sees all; another key only its own.
   */
  waiting?: WaitingJson[];
  swaps: { target: string; evict: string[]; waiters: number }[];
  /** Models loaded at startup (`server.preload`, `preload = true`); absent with none. */
  preload?: {
    pending: string[];
    loading: string | null;
    done: string[];
    skipped: { model: string; reason: string }[];
  };
  resources: {
    vram_budget_gb: number;
    vram_ceiling_gb: number;
    vram_used_gb: number;
    ram_budget_gb: number;
    ram_used_gb: number;
    /** Why the ceiling is what it is, or why the static budget applies. */
    probe: string;
    /** The GPU the probe found: `nvidia`, `nvidia-unified`, `amd`, `apple` or `none` (always set by qm). */
    gpu_kind?: "nvidia" | "nvidia-unified" | "amd" | "apple" | "none";
    /** How qm's share is told: by process (`pids`), `by_change`, or null without a reading. */
    attribution?: "pids" | "by_change" | null;
    /** The latest trusted nvidia-smi reading, or null. */
    gpu: (GpuReadingJson & { foreign_baseline_gb: number | null }) | null;
    /** Each card, with several GPUs; absent on a box admitted against one budget. */
    gpus?: CardStatusJson[];
  };
}

/** One key's use of one model in one hour (`GET /api/usage`). */
export interface UsageJson {
  /** The hour's start, wall-clock epoch ms. */
  hour_ms: number;
  key: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  /** Milliseconds its requests waited for the model, summed. */
  wait_ms: number;
  /** Its requests that found the model not loaded. */
  swaps: number;
}
