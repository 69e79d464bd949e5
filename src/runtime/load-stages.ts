/**
 * How far a llama-server load has got, read off its log lines: each stage it prints on the way
 * (llama.cpp's `tools/server`, `common/common.cpp`, `src/llama-model*.cpp`, both the current
 * `0.00.016.576 I srv    load_model: …` format and the older bare `func: …` one) sets a floor
 * under the load's progress. Floors only rise: a line of an earlier stage seen late changes
 * nothing. The tensor load is the long part: older builds print one `.` per percent of it
 * (llama.cpp's default progress callback), which moves the floor from 15% toward 80% (they come
 * as one line, ended at 100%, so in practice at once); current
 * llama-server reports that progress elsewhere, so its log jumps from the file being opened to
 * the context being made, and the time-based estimate (`load-times.ts`) fills the gap.
 *
 * Pure: no clock, no I/O. The patterns name llama.cpp's own functions, so another server's
 * lines match none of them.
 */

export interface LoadStage {
  /** The fraction of the load this stage shows done (0–0.99). */
  floor: number;
  /** What the server is doing, for status and the wait-status comment. */
  stage: string;
}

/** In load order; the floor of each is where it starts. */
const STAGES: readonly [RegExp, number, string][] = [
  [
    /\bload_model: loading model '|\bllama_(?:model_)?load(?:_model)?_from_file(?:_impl)?: /,
    0.05,
    "opening the model",
  ],
  [
    /\bcommon_(?:init_|fit_params|params_fit_impl): (?:fitting|getting device memory)/,
    0.07,
    "fitting to memory",
  ],
  [/\bllama_model_loader: loaded meta data/, 0.1, "reading metadata"],
  [/(?:^|\s)(?:load|llm_load_vocab|print_info): /, 0.12, "reading the vocabulary"],
  [/\b(?:load_tensors|llm_load_tensors): /, 0.15, "loading tensors"],
  [
    /\bllama_context: constructing|\bllama_new_context_with_model: |\bllama_init_from_model: /,
    0.85,
    "creating the context",
  ],
  [/\bllama_kv_cache(?:_unified)?: /, 0.87, "allocating the KV cache"],
  [/\bllama threadpool init\b/, 0.9, "context ready"],
  [/\bwarming up the model\b/, 0.93, "warming up"],
  [/\bload_model: initializing|\binitializing slots\b/, 0.96, "starting slots"],
  [/\b(?:main|llama_server): model loaded\b/, 0.98, "model loaded"],
  [/\b(?:main|llama_server): (?:server is )?listening on\b/, 0.99, "listening"],
];

const TENSORS_FROM = 0.15;
const TENSORS_TO = 0.8;
const TENSORS = "loading tensors";
/** A line of llama.cpp's progress dots, one per percent (they carry no prefix). */
const DOTS = /^\.+$/;

/** The stage `line` shows, or null when it shows none. */
export function stageOf(line: string): LoadStage | null {
  for (const [pattern, floor, stage] of STAGES) {
    if (pattern.test(line)) return { floor, stage };
  }
  return null;
}

/** One load's progress as its lines show it. */
export class LoadStages {
  floor = 0;
  stage: string | null = null;
  /** Progress dots seen so far (percent of the tensors loaded). */
  private dots = 0;

  /** Reads one line; true when it moved the floor. */
  line(line: string): boolean {
    if (line.length > 0 && line.charCodeAt(0) === 0x2e && DOTS.test(line)) {
      this.dots = Math.min(100, this.dots + line.length);
      return this.raise(TENSORS_FROM + ((TENSORS_TO - TENSORS_FROM) * this.dots) / 100, TENSORS);
    }
    const found = stageOf(line);
    return found !== null && this.raise(found.floor, found.stage);
  }

  private raise(floor: number, stage: string): boolean {
    if (floor <= this.floor) return false;
    this.floor = Math.min(0.99, floor);
    this.stage = stage;
    return true;
  }
}

/** The stage a whole log shows (a pure fold of `LoadStages` over `lines`). */
export function stagesOf(lines: Iterable<string>): { floor: number; stage: string | null } {
  const s = new LoadStages();
  for (const line of lines) s.line(line);
  return { floor: s.floor, stage: s.stage };
}
