/**
 * The model servers' own metrics, merged into qm's `/metrics`: every sample gets a
 * `model="ID"` label (a `model` label the server set itself becomes `upstream_model`), and the
 * families of the same name from several models are written as one (one HELP, one TYPE), as
 * the exposition format requires. Pure.
 *
 * A family is dropped, with the reason handed to `dropped`, when it cannot be merged:
 * - its name or one of its series' names is qm's (`qm_…`: every qm name has that prefix, and
 *   the set qm shows varies from scrape to scrape — GPU gauges come and go — so the whole
 *   prefix is reserved rather than the names of the moment);
 * - another model's family of that name has another type;
 * - one of its series' names belongs to another family (`x_count` of a histogram `x` beside
 *   a plain `x_count` from another server).
 *
 * A family in vLLM's namespace (`vllm:…`) is renamed `upstream:vllm:…`, series and all: qm
 * shows the model server protocol's gauges under those names for the box as a whole
 * (`model-server.ts`), and an endpoint picker reads the first series of a name it knows, so
 * an engine's own `vllm:num_requests_waiting{model="x"}` must never stand beside qm's. The
 * whole prefix is renamed, not the protocol's names of the moment: the picker reads more of
 * them as it grows (`vllm:cache_config_info`, `vllm:max_gpu_lora_adapters`, …).
 */
import type { Family, MetricType, Sample } from "./exposition.ts";

export interface Scraped {
  model: string;
  families: readonly Family[];
}

/** What a family drop is reported with (logged once per model and family by the caller). */
export type DropReport = (model: string, family: string, why: string) => void;

/** qm's own names: no upstream family may use them. */
export const QM_PREFIX = "qm_";

/** The model server protocol's namespace, and what an engine's families in it are renamed to. */
export const PROTOCOL_PREFIX = "vllm:";
export const RENAMED_PREFIX = "upstream:";

/** `f` out of the protocol's namespace (`vllm:x` → `upstream:vllm:x`), its series too. */
function outOfProtocol(f: Family): Family {
  if (!f.name.startsWith(PROTOCOL_PREFIX)) return f;
  const moved = (name: string) => (name.startsWith(PROTOCOL_PREFIX) ? RENAMED_PREFIX + name : name);
  return {
    ...f,
    name: moved(f.name),
    samples: f.samples.map((s) => ({ ...s, name: moved(s.name) })),
  };
}

/** The series names a family of `type` may write (its own name included). */
function seriesNames(f: Family): string[] {
  const names = new Set<string>([f.name]);
  if (f.type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(f.name + s);
  if (f.type === "summary") for (const s of ["_sum", "_count"]) names.add(f.name + s);
  for (const s of f.samples) names.add(s.name);
  return [...names];
}

/** `labels` with `model` renamed `upstream_model` (and so on, should that be taken too). */
function relabel(model: string, labels: readonly [string, string][]): [string, string][] {
  const own = new Set(labels.map(([k]) => k));
  const rename = new Map<string, string>();
  for (let from = "model"; own.has(from); from = `upstream_${from}`) {
    rename.set(from, `upstream_${from}`);
  }
  return [["model", model], ...labels.map(([k, v]): [string, string] => [rename.get(k) ?? k, v])];
}

/** Merges the scraped families, in the order first seen; each model's samples in its order. */
export function mergeUpstream(scraped: readonly Scraped[], dropped: DropReport): Family[] {
  const merged = new Map<string, { type: MetricType; help: string | null; samples: Sample[] }>();
  /** Which family writes each series name. */
  const owner = new Map<string, string>();
  for (const { model, families } of scraped) {
    for (const written of families) {
      if (written.samples.length === 0) continue;
      const f = outOfProtocol(written);
      const names = seriesNames(f);
      if (names.some((n) => n.startsWith(QM_PREFIX))) {
        dropped(model, f.name, `its name is qm's own (${QM_PREFIX}…)`);
        continue;
      }
      const into = merged.get(f.name);
      if (into && into.type !== f.type) {
        dropped(model, f.name, `it is a ${f.type} where another model's is a ${into.type}`);
        continue;
      }
      const taken = names.find((n) => {
        const o = owner.get(n);
        return o !== undefined && o !== f.name;
      });
      if (taken !== undefined) {
        dropped(model, f.name, `its series ${taken} is written by family ${owner.get(taken)}`);
        continue;
      }
      for (const n of names) owner.set(n, f.name);
      const samples = f.samples.map((s) => ({ ...s, labels: relabel(model, s.labels) }));
      if (into) {
        into.help ??= f.help;
        into.samples.push(...samples);
      } else {
        merged.set(f.name, { type: f.type, help: f.help, samples });
      }
    }
  }
  return [...merged].map(([name, f]) => ({ name, ...f }));
}
