/**
 * What the dashboard reads of qm's API, as the page sees it. Kept apart from the server's types
 * (this folder compiles for browsers, without Bun's); tests/ui/wire.test.ts checks that the
 * server's `StatusJson` and `RequestRecord` still fit these.
 */
export type ModelState = "stopped" | "starting" | "ready" | "stopping" | "failed" | "sleeping";

export interface ModelStatus {
  id: string;
  state: ModelState;
  inflight: number;
  leases: number;
  queued: number;
  /** Places in the waiting line (1 = next) of its queued requests. */
  queue_positions: number[];
  held_until_ms: number | null;
  /** Why it is held (`hold_policy = "cost"`): `gap 2.1 s expected, swap 6.3 s`. */
  held_reason?: string | null;
  /**
   * How its last hold ended, until its next one: `how` `expired` / `preempted` / `dropped`,
   * `reason` (`gap spent`, `loop ended`, `patience`, `cost`, `fairness`, `priority`), `at_ms`
   * epoch ms. Absent from an older qm.
   */
  hold_ended?: { how: string; reason: string; at_ms: number } | null;
  est_vram_gb: number;
  est_ram_gb: number;
  pid: number | null;
  port: number | null;
  aliases: string[];
  group: string;
  ttl_s: number;
  keep_alive_ms: number | null;
  unload_at_ms: number | null;
  concurrency_limit: number;
  unlisted: boolean;
  last_error: string | null;
  load: {
    elapsed_ms: number;
    expected_ms: number | null;
    progress: number | null;
    /** The stage the model's log shows (llama-server's), or null. */
    stage?: string | null;
  } | null;
  last_load_ms: number | null;
  /**
   * While it waits to load: the fraction of its GGUF files qm has read into memory ahead of
   * the load (0 to 1); null otherwise. Absent from an older qm.
   */
  prefetched?: number | null;
  /** The cards it runs on (several GPUs), while it holds memory. */
  gpus?: number[];
  /** A managed node's model: the node it runs on (its memory is not this box's). */
  node?: string;
}

/** One card, with several GPUs. */
export interface CardStatus {
  index: number;
  budget_gb: number;
  ceiling_gb: number;
  used_gb: number;
  models: string[];
  reading: CardReading | null;
}

export interface CardReading {
  total_gb: number;
  used_gb: number;
  free_gb: number;
  ours_gb: number;
  foreign_gb: number;
}

export interface GpuReading extends CardReading {
  foreign_baseline_gb: number | null;
}

export interface Status {
  version: string;
  uptime_s: number;
  models: ModelStatus[];
  queue: { depth: number };
  /** Who waits for what (an admin key sees all; another key its own). */
  waiting?: Waiting[];
  swaps: { target: string; evict: string[]; waiters: number }[];
  resources: {
    vram_budget_gb: number;
    vram_ceiling_gb: number;
    vram_used_gb: number;
    ram_budget_gb: number;
    ram_used_gb: number;
    probe: string;
    /** The GPU the probe found. */
    gpu_kind?: "nvidia" | "nvidia-unified" | "amd" | "apple" | "none";
    /** How qm's share of it is told: by process, by change, or null without a reading. */
    attribution?: "pids" | "by_change" | null;
    gpu: GpuReading | null;
    /** Each card, with several GPUs; absent on a one-budget box. */
    gpus?: CardStatus[];
  };
}

/** One request waiting for a model. */
export interface Waiting {
  key: string;
  model: string;
  waited_ms: number;
  position: number | null;
}

/** One key's use of one model in one hour (`GET /api/usage`). */
export interface UsageRow {
  hour_ms: number;
  key: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  wait_ms: number;
  swaps: number;
}

export interface RequestRecord {
  time: number;
  /** The key's name (`anonymous` when no key is configured). */
  key?: string;
  model: string;
  api: string;
  status: number;
  answered: boolean;
  wait_ms: number | null;
  swap: boolean;
  duration_ms: number;
  ttft_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  finish_reason: string | null;
}

/** `GET /api/history`: one card in one memory sample (GB). */
export interface HistoryCard {
  index: number;
  used_gb: number;
  models: Record<string, number>;
  foreign_gb: number;
  budget_gb: number;
  ceiling_gb: number;
}

export interface History {
  memory: { t: number; cards: HistoryCard[] }[];
  residency: { model: string; state: "loading" | "resident"; from: number; to: number | null }[];
  swaps: { t: number; loaded: string | null; evicted: string[]; reason: string }[];
}
