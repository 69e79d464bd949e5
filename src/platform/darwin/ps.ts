/**
 * The process table on Darwin, from ps(1) (macOS has no /proc):
 *
 *   ps -axo pid=,ppid=,pgid=,stat=,lstart=,comm=
 *
 * one line per process, right-aligned numbers, `stat` (its first letter is the state: R, S,
 * I, U, T or Z), `lstart` as C's `%c` ("Tue Mar  4 09:15:02 2025": `LC_ALL=C`, and `TZ=UTC` so
 * it reads the same whatever the user's zone), then `comm`, the executable's path, which may
 * hold spaces (it is last for that reason). macOS shows no session id; the process group
 * stands in for it (every model leads a group and a session of its own).
 */
import type { ProcEntry } from "../types.ts";

export const PS_FIELDS = "pid=,ppid=,pgid=,stat=,lstart=,comm=";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

const LINE =
  /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+([A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4}))(?: (.*))?$/;

/** `ps -o lstart` in UTC → seconds since the epoch; null when it does not read as one. */
export function parseLstart(text: string): number | null {
  const m = /^[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})$/.exec(
    text.trim(),
  );
  if (!m) return null;
  const month = MONTHS.indexOf(m[1]!);
  if (month < 0) return null;
  const [day, h, min, s, year] = [m[2], m[3], m[4], m[5], m[6]].map(Number);
  return Date.UTC(year!, month, day!, h!, min!, s!) / 1000;
}

/** One process per line; lines that do not read (a header, a cut line) are skipped. */
export function parsePs(text: string): ProcEntry[] {
  const out: ProcEntry[] = [];
  for (const line of text.split("\n")) {
    const m = LINE.exec(line);
    if (!m) continue;
    const start = parseLstart(m[5]!);
    if (start === null) continue;
    const pgrp = Number(m[3]);
    const path = (m[12] ?? "").trim();
    out.push({
      pid: Number(m[1]),
      ppid: Number(m[2]),
      pgrp,
      session: pgrp,
      state: m[4]![0]!,
      start,
      comm: path.slice(path.lastIndexOf("/") + 1),
    });
  }
  return out;
}

/**
 * `ps -axwwEo pid=,command=`: each process's command line with its environment after it
 * (`-E`; only for this user's processes unless root). The two cannot be told apart, so each
 * process gets every word: a `NAME=value` entry is found among them exactly.
 */
export function parsePsEnvironment(text: string): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const line of text.split("\n")) {
    const m = /^\s*(\d+) (.*)$/.exec(line);
    if (m) out.set(Number(m[1]), m[2]!.split(/\s+/).filter(Boolean));
  }
  return out;
}
