/**
 * `qm demo-smi`: a stand-in for nvidia-smi that answers the two queries qm's GPU probe makes,
 * from the memory demo models hold (`qm demo-upstream --vram-mb N` with `QM_DEMO_VRAM_DIR=DIR`
 * writes `DIR/<pid>.json`). It lets `qm selftest` (and anyone) run the GPU scenarios on a box
 * without a GPU. Like the real one it lists a process only while it is alive, a card's used
 * memory follows, and with `--release-lag-ms` a dead process's memory stays used that long (a
 * driver that reclaims late). `--hide-pids` lists every process under a pid no process can have
 * (above Linux's pid_max), as nvidia-smi does inside a container with its own PID namespace.
 * `--from CMD` asks a real nvidia-smi instead (with `--hide-pids`: the container case on a
 * real card).
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { splitCommand } from "../../config/argv.ts";
import { SIM_DIR_ENV, type SimHold } from "../../demo/vram.ts";
import { COMPUTE_APPS_FIELDS } from "../../gpu/parse-compute-apps.ts";
import { GPU_QUERY_FIELDS } from "../../gpu/parse-gpu-query.ts";

/** Linux's pid_max is at most 2^22: no process has a pid above it. */
export const HIDDEN_PID_OFFSET = 4_194_304;

export const DEMO_SMI_HELP = `Usage: qm demo-smi [options] --query-gpu=… | --query-compute-apps=… --format=csv,noheader,nounits

A stand-in for nvidia-smi, answering the queries of qm's GPU probe (resources.gpu_probe =
"qm demo-smi --dir DIR") from the memory demo models hold: qm demo-upstream --vram-mb N run
with ${SIM_DIR_ENV}=DIR. Used by 'qm selftest'.
  --dir DIR             where the demo models write what they hold
  --cards N             how many cards (default 1)
  --total-mib N         each card's memory in MiB (default 24576)
  --base-mib N          memory used on each card by no listed process, as a desktop's (default 0)
  --release-lag-ms N    a process's memory stays used N ms after it is gone (default 0)
  --hide-pids           list processes under pids qm cannot know (a PID namespace)
  --from CMD            answer with a real nvidia-smi (CMD) instead of DIR
`;

export interface DemoSmiOptions {
  dir: string | null;
  cards: number;
  totalMib: number;
  baseMib: number;
  releaseLagMs: number;
  hidePids: boolean;
  from: string | null;
  query: "gpu" | "apps";
}

type Parsed = { ok: true; options: DemoSmiOptions } | { ok: false; message: string; help?: true };

export function parseDemoSmi(argv: readonly string[]): Parsed {
  const o: DemoSmiOptions = {
    dir: null,
    cards: 1,
    totalMib: 24576,
    baseMib: 0,
    releaseLagMs: 0,
    hidePids: false,
    from: null,
    query: "gpu",
  };
  let query: string | null = null;
  let format = false;
  const ints: Record<string, "cards" | "totalMib" | "baseMib" | "releaseLagMs"> = {
    "--cards": "cards",
    "--total-mib": "totalMib",
    "--base-mib": "baseMib",
    "--release-lag-ms": "releaseLagMs",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-h" || a === "--help") return { ok: false, message: DEMO_SMI_HELP, help: true };
    if (a === "--hide-pids") o.hidePids = true;
    else if (a === "--dir" || a === "--from") {
      const v = argv[++i];
      if (!v) return { ok: false, message: `${a} needs a value` };
      if (a === "--dir") o.dir = v;
      else o.from = v;
    } else if (a in ints) {
      const v = argv[++i] ?? "";
      if (!/^\d{1,9}$/.test(v)) return { ok: false, message: `${a} needs a whole number` };
      o[ints[a]!] = Number(v);
    } else if (a.startsWith("--query-gpu=") || a.startsWith("--query-compute-apps=")) query = a;
    else if (a === "--format=csv,noheader,nounits") format = true;
    else return { ok: false, message: `unknown option ${a}` };
  }
  if (o.dir === null && o.from === null) return { ok: false, message: "--dir or --from is needed" };
  if (o.cards < 1) return { ok: false, message: "--cards must be at least 1" };
  if (query === null || !format) {
    return {
      ok: false,
      message: "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.",
    };
  }
  if (query === `--query-gpu=${GPU_QUERY_FIELDS}`) o.query = "gpu";
  else if (query === `--query-compute-apps=${COMPUTE_APPS_FIELDS}`) o.query = "apps";
  else
    return { ok: false, message: `Field "${query.split("=")[1]}" is not a valid field to query.` };
  return { ok: true, options: o };
}

export const demoCardUuid = (i: number) =>
  `GPU-9e0d3c5a-0000-4000-8000-${String(i + 1).padStart(12, "0")}`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}

interface Holder extends SimHold {
  pid: number;
  /** Gone, but its memory not yet reclaimed. */
  lingering: boolean;
}

/** The holders in DIR now; gone ones past the lag are forgotten (their files removed). */
function holders(o: DemoSmiOptions, now: number): Holder[] {
  const dir = o.dir!;
  const out: Holder[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {}
  for (const name of names) {
    const m = /^(\d+)\.json$/.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    let rec: SimHold;
    try {
      rec = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      continue; // being written, or just removed
    }
    const pid = Number(m[1]);
    if (rec.goneAt === undefined && alive(pid)) {
      out.push({ pid, mib: rec.mib, card: rec.card, lingering: false });
      continue;
    }
    const goneAt = rec.goneAt ?? now;
    if (rec.goneAt === undefined) writeFileSync(file, JSON.stringify({ ...rec, goneAt }));
    if (now - goneAt < o.releaseLagMs)
      out.push({ pid, mib: rec.mib, card: rec.card, lingering: true });
    else rmSync(file, { force: true });
  }
  return out;
}

/** What nvidia-smi would print for the query, from DIR. */
export function simulate(o: DemoSmiOptions, now = Date.now()): string {
  const list = holders(o, now).filter((h) => h.card >= 0 && h.card < o.cards);
  if (o.query === "apps") {
    return list
      .filter((h) => !h.lingering)
      .map(
        (h) =>
          `${o.hidePids ? h.pid + HIDDEN_PID_OFFSET : h.pid}, ${demoCardUuid(h.card)}, ${h.mib}\n`,
      )
      .join("");
  }
  let text = "";
  for (let i = 0; i < o.cards; i++) {
    const used = Math.min(
      o.totalMib,
      o.baseMib + list.filter((h) => h.card === i).reduce((s, h) => s + h.mib, 0),
    );
    text += `${i}, ${demoCardUuid(i)}, qm demo GPU, ${o.totalMib}, ${used}, ${o.totalMib - used}\n`;
  }
  return text;
}

/** `--from`: the real nvidia-smi's answer, pids moved out of reach with `--hide-pids`. */
function relay(o: DemoSmiOptions, argv: readonly string[]): number {
  const query = argv.filter((a) => a.startsWith("--query-") || a.startsWith("--format="));
  const run = Bun.spawnSync([...splitCommand(o.from!), ...query], {
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = run.stdout.toString();
  if (o.query === "apps" && o.hidePids) {
    text = text.replace(/^(\d+),/gm, (_, pid: string) => `${Number(pid) + HIDDEN_PID_OFFSET},`);
  }
  process.stdout.write(text);
  process.stderr.write(run.stderr.toString());
  return run.exitCode ?? 1;
}

export function demoSmiCommand(argv: string[]): number {
  const parsed = parseDemoSmi(argv);
  if (!parsed.ok) {
    if (parsed.help) {
      process.stdout.write(parsed.message);
      return 0;
    }
    // nvidia-smi prints its complaints on stdout and exits 2 for a bad argument.
    process.stdout.write(`${parsed.message}\n`);
    return 2;
  }
  if (parsed.options.from !== null) return relay(parsed.options, argv);
  process.stdout.write(simulate(parsed.options));
  return 0;
}
