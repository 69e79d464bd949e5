/**
 * The Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format): a parser for
 * what model servers expose on their `/metrics` (llama-server's `llamacpp:…`, vLLM's `vllm:…`,
 * written by prometheus_client or hand-made) and a writer for qm's merged `/metrics`.
 *
 * Written here rather than taken from npm: the one parser there (`parse-prometheus-text-format`)
 * folds histograms and summaries into objects and drops timestamps, so what it gives back cannot
 * be written out again sample for sample — which is all qm needs to do with it.
 *
 * Pure: no I/O. A malformed exposition is an `ExpositionError` naming the line, and the whole
 * text is refused, as Prometheus refuses a scrape it cannot parse.
 */

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  /** The series' own name: `x`, or `x_bucket` / `x_sum` / `x_count` of a histogram `x`. */
  name: string;
  /** In the order written. */
  labels: [string, string][];
  value: number;
  /** Milliseconds since the epoch, as written (an int64 may not fit a double); null: none. */
  timestamp: string | null;
}

export interface Family {
  name: string;
  type: MetricType;
  help: string | null;
  samples: Sample[];
}

export class ExpositionError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

const TYPES = new Set<string>(["counter", "gauge", "histogram", "summary", "untyped"]);
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
// Sticky: matched where the scan stands, without slicing the rest of the line.
const NAME_AT = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
const LABEL_AT = /[a-zA-Z_][a-zA-Z0-9_]*/y;
// Go's strconv.ParseFloat, which Prometheus reads values with, less hexadecimal and underscores.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;
const TIMESTAMP = /^-?\d+$/;

/** A value as written: a decimal, `NaN`, `+Inf`, `-Inf` (any case, as Go reads them). */
export function parseValue(text: string): number | null {
  if (DECIMAL.test(text)) return Number(text);
  if (!SPECIAL.test(text)) return null;
  const lower = text.toLowerCase();
  if (lower.endsWith("nan")) return Number.NaN;
  return lower.startsWith("-") ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
}

/** A value as the format writes it. */
export function formatValue(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Number.POSITIVE_INFINITY) return "+Inf";
  if (n === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(n);
}

/** The family a sample named `name` belongs to, given the families declared so far. */
function familyOf(families: Map<string, Family>, name: string): Family | undefined {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f?.type === "histogram" || (f?.type === "summary" && suffix !== "_bucket")) return f;
  }
  return families.get(name);
}

/** Parses a whole exposition; families in the order they first appear. */
export function parseExposition(text: string): Family[] {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { name, type: "untyped", help: null, samples: [] };
      families.set(name, f);
    }
    return f;
  };
  const typed = new Set<string>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    let line = lines[i]!;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
      if (!m) continue; // any other comment
      const [, keyword, name, rest = ""] = m as unknown as [string, string, string, string?];
      if (!METRIC_NAME.test(name)) throw new ExpositionError(n, `invalid metric name "${name}"`);
      const f = family(name);
      if (keyword === "HELP") {
        if (f.help !== null) throw new ExpositionError(n, `second HELP for ${name}`);
        f.help = unescapeHelp(rest);
        continue;
      }
      const type = rest.trim();
      if (!TYPES.has(type)) throw new ExpositionError(n, `unknown type "${type}" for ${name}`);
      if (typed.has(name)) throw new ExpositionError(n, `second TYPE for ${name}`);
      if (f.samples.length > 0) throw new ExpositionError(n, `TYPE for ${name} after its samples`);
      typed.add(name);
      f.type = type as MetricType;
      continue;
    }
    const sample = parseSample(line, n);
    const f = familyOf(families, sample.name) ?? family(sample.name);
    checkSample(f, sample, n);
    f.samples.push(sample);
  }
  return [...families.values()];
}

/** What the format requires of a histogram's and a summary's samples. */
function checkSample(f: Family, s: Sample, n: number): void {
  const has = (label: string) => s.labels.some(([k]) => k === label);
  if (f.type === "histogram") {
    if (s.name === f.name) throw new ExpositionError(n, `histogram ${f.name} has a plain sample`);
    if (s.name.endsWith("_bucket")) {
      const le = s.labels.find(([k]) => k === "le")?.[1];
      if (le === undefined || parseValue(le) === null) {
        throw new ExpositionError(n, `${s.name} needs an "le" label holding a number`);
      }
    }
  } else if (f.type === "summary" && s.name === f.name && !has("quantile")) {
    throw new ExpositionError(n, `summary ${f.name}'s sample needs a "quantile" label`);
  }
}

/** `name{labels} value [timestamp]`. */
function parseSample(line: string, n: number): Sample {
  let i = 0;
  const len = line.length;
  const skipBlanks = () => {
    while (i < len && (line[i] === " " || line[i] === "\t")) i++;
  };
  skipBlanks();
  const name = matchAt(NAME_AT, line, i);
  if (name === null) throw new ExpositionError(n, `invalid metric name in "${line}"`);
  i += name.length;
  const labels: [string, string][] = [];
  const afterName = i;
  skipBlanks();
  if (line[i] !== "{" && i === afterName) {
    const what = i < len ? `invalid metric name in "${line}"` : `no value after ${name}`;
    throw new ExpositionError(n, what);
  }
  if (line[i] === "{") {
    i++;
    const seen = new Set<string>();
    for (;;) {
      skipBlanks();
      if (line[i] === "}") {
        i++;
        break;
      }
      const label = matchAt(LABEL_AT, line, i);
      if (label === null) throw new ExpositionError(n, `invalid label name in "${line}"`);
      i += label.length;
      if (seen.has(label)) throw new ExpositionError(n, `label ${label} twice in "${line}"`);
      seen.add(label);
      skipBlanks();
      if (line[i] !== "=") throw new ExpositionError(n, `expected "=" after label ${label}`);
      i++;
      skipBlanks();
      if (line[i] !== '"') throw new ExpositionError(n, `expected a quoted value for ${label}`);
      i++;
      let value = "";
      for (;;) {
        // The run up to the next quote or backslash in one slice (most values have neither).
        const quote = line.indexOf('"', i);
        const slash = line.indexOf("\\", i);
        const j = quote < 0 ? len : slash >= 0 && slash < quote ? slash : quote;
        value += line.slice(i, j);
        i = j;
        if (i >= len) throw new ExpositionError(n, `unterminated value of label ${label}`);
        if (line[i++] === '"') break;
        const e = line[i++];
        if (e === "\\") value += "\\";
        else if (e === '"') value += '"';
        else if (e === "n") value += "\n";
        else throw new ExpositionError(n, `invalid escape "\\${e ?? ""}" in label ${label}`);
      }
      labels.push([label, value]);
      skipBlanks();
      if (line[i] === ",") {
        i++;
        continue;
      }
      if (line[i] !== "}") throw new ExpositionError(n, `expected "," or "}" after label ${label}`);
    }
  }
  const rest = line
    .slice(i)
    .trim()
    .split(/[ \t]+/);
  if (rest[0] === "" || rest.length > 2) {
    throw new ExpositionError(n, `expected "value [timestamp]" in "${line}"`);
  }
  const value = parseValue(rest[0]!);
  if (value === null) throw new ExpositionError(n, `invalid value "${rest[0]}" in "${line}"`);
  const timestamp = rest[1] ?? null;
  if (timestamp !== null && !TIMESTAMP.test(timestamp)) {
    throw new ExpositionError(n, `invalid timestamp "${timestamp}" in "${line}"`);
  }
  return { name, labels, value, timestamp };
}

/** The match of sticky `re` at `at`, or null. */
function matchAt(re: RegExp, text: string, at: number): string | null {
  re.lastIndex = at;
  return re.exec(text)?.[0] ?? null;
}

/** HELP text escapes only `\\` and `\n`; any other backslash is kept as written. */
function unescapeHelp(text: string): string {
  return text.replace(/\\([\\n])/g, (_, c: string) => (c === "n" ? "\n" : "\\"));
}

const escapeHelp = (text: string) => text.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
const escapeLabel = (text: string) =>
  text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

/** One sample line, without its newline. */
export function formatSample(s: Sample): string {
  const labels =
    s.labels.length === 0
      ? ""
      : `{${s.labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
  const ts = s.timestamp === null ? "" : ` ${s.timestamp}`;
  return `${s.name}${labels} ${formatValue(s.value)}${ts}`;
}

/** A family as the format writes it: HELP (when known), TYPE, its samples; "" when it has none. */
export function formatFamily(f: Family): string {
  if (f.samples.length === 0) return "";
  const lines: string[] = [];
  if (f.help !== null) lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`);
  lines.push(`# TYPE ${f.name} ${f.type}`);
  for (const s of f.samples) lines.push(formatSample(s));
  return `${lines.join("\n")}\n`;
}
