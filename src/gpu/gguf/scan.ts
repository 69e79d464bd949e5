/**
 * `qm scan DIR... [--ctx N] [--gpu-layers N|all]`: reads the GGUF headers under each
 * DIR and prints `[models.<id>]` entries with `est_vram_gb` on stdout, ready to paste
 * into quartermaster.toml. Problems go to stderr; the scan goes on past them.
 * Exit 0, 1 when any file could not be used or no model was found, 2 on a usage error.
 */
import { stat } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { which } from "../../config/programs.ts";
import { type Candidate, findGgufFiles, groupCandidates } from "./discover.ts";
import { sizeModel } from "./estimate.ts";
import { formatParams, parameterCount, quantLabel } from "./file-types.ts";
import { metaString } from "./metadata.ts";
import { readGgufFile } from "./read-header.ts";
import { mergeSplit, splitParts } from "./split.ts";
import { modelId, renderEntry, SERVER } from "./toml-entry.ts";
import type { GgufHeader, GgufModel } from "./types.ts";

export const SCAN_HELP = `Usage: qm scan DIR... [--ctx N] [--gpu-layers N|all]

Reads the headers of the GGUF files under each DIR (recursively) and prints a
[models.<id>] entry per model on stdout, ready for quartermaster.toml:
  est_vram_gb = weights + KV cache at the context size + overhead, in GB (GiB)

Options:
  --ctx N              context size (--ctx-size and KV cache); default: the
                       model's context_length, at most 8192
  --gpu-layers N|all   layers to offload (adds -ngl; "all" = -ngl 999);
                       default: all layers, no -ngl
  -h, --help           show this help

Split models (NAME-00001-of-0000N.gguf) are sized over all their parts.
mmproj files (vision projectors) are skipped and listed as comments.
Exit status: 0 ok; 1 a file could not be used, or no model found; 2 usage error.
`;

export interface ScanIo {
  out(text: string): void;
  err(text: string): void;
  /** Finds a program on PATH (the entries' `llama-server`). */
  which(program: string): string | null;
}

const stdio: ScanIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  which: (program) => which(program, process.env.PATH ?? ""),
};

type Options = { dirs: string[]; ctx?: number; gpuLayers?: number };

export async function scanCommand(argv: string[], io: ScanIo = stdio): Promise<number> {
  const opts = parseOptions(argv);
  if (opts === "help") {
    io.out(SCAN_HELP);
    return 0;
  }
  if (typeof opts === "string") {
    io.err(`qm scan: ${opts}\nRun 'qm scan --help' for usage.\n`);
    return 2;
  }
  let failures = 0;
  const problem = (path: string, reason: string) => {
    failures++;
    io.err(`qm scan: ${path}: ${reason}\n`);
  };
  const files: string[] = [];
  // Absolute paths: the entries' `-m` must work from wherever qm serve is started.
  for (const dir of opts.dirs.map((d) => resolve(d))) {
    const st = await stat(dir).catch(() => null);
    if (!st) problem(dir, "no such file or directory");
    else if (st.isDirectory()) files.push(...(await findGgufFiles(dir)));
    else if (/\.gguf$/i.test(dir)) files.push(dir);
    else problem(dir, "not a directory or a .gguf file");
  }
  const found = groupCandidates([...new Set(files)]);
  for (const p of found.problems) problem(p.path, p.reason);
  const entries: string[] = [];
  const skipped = found.projectors.map(
    (p) => `# skipped ${p}: multimodal projector (add --mmproj ${p} to its model's cmd)`,
  );
  const taken = new Set<string>();
  for (const cand of found.models) {
    const loaded = await loadCandidate(cand);
    if (!loaded.ok) {
      problem(loaded.path, loaded.reason);
      continue;
    }
    const skip = skipReason(loaded.model);
    if (skip) {
      skipped.push(`# skipped ${cand.path}: ${skip}`);
      continue;
    }
    const estimate = sizeModel(loaded.model, {
      ...(opts.ctx === undefined ? {} : { ctx: opts.ctx }),
      ...(opts.gpuLayers === undefined ? {} : { gpuLayers: opts.gpuLayers }),
    });
    entries.push(
      renderEntry({
        id: modelId(cand.name, taken),
        path: cand.path,
        estimate,
        params: formatParams(parameterCount(loaded.model)),
        quant: quantLabel(loaded.model),
        ...(opts.gpuLayers === undefined ? {} : { gpuLayers: opts.gpuLayers }),
      }),
    );
  }
  if (entries.length > 0 || skipped.length > 0) {
    const head = `# qm scan ${opts.dirs.join(" ")}: ${entries.length} model${entries.length === 1 ? "" : "s"}; est_vram_gb in GiB = weights + KV cache + overhead\n`;
    io.out([head, ...entries, ...(skipped.length ? [`${skipped.join("\n")}\n`] : [])].join("\n"));
  }
  if (entries.length > 0 && io.which(SERVER) === null) {
    io.err(
      `qm scan: warning: ${SERVER} was not found on PATH; the entries start it (install llama.cpp's server, or give its full path in cmd)\n`,
    );
  }
  if (entries.length === 0 && failures === 0) {
    io.err(`qm scan: no GGUF model found under ${opts.dirs.join(", ")}\n`);
    return 1;
  }
  if (failures > 0) {
    io.err(`qm scan: ${failures} file${failures === 1 ? "" : "s"} could not be used\n`);
    return 1;
  }
  return 0;
}

function parseOptions(argv: string[]): Options | "help" | string {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  const { values, positionals } = parsed;
  if (values.help) return "help";
  if (positionals.length === 0) return "missing DIR";
  const opts: Options = { dirs: positionals };
  if (values.ctx !== undefined) {
    if (!/^\d+$/.test(values.ctx) || Number(values.ctx) < 1) {
      return `--ctx wants a positive whole number, got "${values.ctx}"`;
    }
    opts.ctx = Number(values.ctx);
  }
  const gl = values["gpu-layers"];
  if (gl !== undefined) {
    if (gl === "all") opts.gpuLayers = 999;
    else if (/^\d+$/.test(gl)) opts.gpuLayers = Number(gl);
    else return `--gpu-layers wants a whole number or "all", got "${gl}"`;
  }
  return opts;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      ctx: { type: "string" },
      "gpu-layers": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

type Loaded = { ok: true; model: GgufModel } | { ok: false; path: string; reason: string };

/**
 * A model file as llama-server loads it: one GGUF, or — given part 1 of a split model, as
 * `-m` is — every part of it, summed (`qm doctor`).
 */
export async function readModelFile(
  path: string,
): Promise<{ ok: true; model: GgufModel } | { ok: false; reason: string }> {
  const loaded = await loadCandidate({ name: basename(path), path, parts: splitParts(path) });
  if (loaded.ok) return loaded;
  return {
    ok: false,
    reason: loaded.path === path ? loaded.reason : `${loaded.path}: ${loaded.reason}`,
  };
}

async function loadCandidate(cand: Candidate): Promise<Loaded> {
  const headers: GgufHeader[] = [];
  for (const part of cand.parts) {
    const read = await readGgufFile(part);
    if (!read.ok) return { ok: false, path: part, reason: read.reason };
    const h = read.header;
    if (h.dataOffset + h.dataBytes > h.fileSize) {
      return {
        ok: false,
        path: part,
        reason: `file is ${h.fileSize} bytes but its tensors need ${h.dataOffset + h.dataBytes} (incomplete download?)`,
      };
    }
    headers.push(h);
  }
  if (headers.length === 1) return { ok: true, model: headers[0]! };
  const merged = mergeSplit(headers);
  return merged.ok ? merged : { ok: false, path: cand.path, reason: merged.reason };
}

/** Files that are valid GGUF but not a model llama-server serves on its own. */
function skipReason(model: GgufModel): string | null {
  const arch = metaString(model.metadata, "general.architecture");
  if (arch === "clip") return "multimodal projector (clip)";
  if (metaString(model.metadata, "general.type") === "adapter") return "LoRA adapter (use --lora)";
  if (model.tensors.length === 0) return "no tensors (vocabulary-only file?)";
  return null;
}
