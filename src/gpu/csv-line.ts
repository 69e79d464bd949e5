/**
 * `--format=csv,noheader,nounits` rows: fields joined by ", ", no quoting (nvidia-smi
 * `--help-query-gpu`). Values it cannot read come out bracketed: `[N/A]`,
 * `[Not Supported]`, `[Unknown Error]`, `[Insufficient Permissions]`.
 */

export function csvLines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

export function csvFields(line: string): string[] {
  return line.split(",").map((f) => f.trim());
}

/** True for a value nvidia-smi could not read (`[N/A]`, `[Not Supported]`, bare `N/A`). */
export function isUnavailable(field: string): boolean {
  return /^\[.*\]$/.test(field) || /^N\/A$/i.test(field);
}

/** A non-negative number of MiB (or a pid / index), or null. */
export function parseCount(field: string): number | null {
  if (!/^\d+(\.\d+)?$/.test(field)) return null;
  const n = Number(field);
  return Number.isFinite(n) ? n : null;
}

/** A short quote of a line for messages, so garbage cannot flood `qm status`. */
export function quote(line: string): string {
  return JSON.stringify(line.length > 60 ? `${line.slice(0, 57)}...` : line);
}
