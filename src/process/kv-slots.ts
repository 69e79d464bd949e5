/**
 * `keep_kv`: a llama-server's slots saved before a stop and restored after the next start,
 * over its `/slots` API (`GET /slots`, `POST /slots/{id}?action=save|restore`), into the
 * model's folder under the state dir with a manifest. Nothing here throws: every failure is
 * logged and the model carries on cold. Every call is bounded by one deadline per save or
 * restore (`KeepKv.timeoutMs`) on the injected timers. Invariants: ./design.md.
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { KeepKv } from "../config/types.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { readAtMost } from "../shared/read-at-most.ts";
import { realTimers, type Timers } from "../shared/timer.ts";
import { MANIFEST, modelStamp } from "./kv-folders.ts";

export interface KvSlotsDeps {
  log: Logger;
  /** Default: the global fetch. */
  fetch?: Fetch;
  /** Default: real timers. */
  timers?: Timers;
}

interface SavedSlot {
  file: string;
  /** Tokens the slot held when saved (`n_saved`). */
  tokens: number;
  /** Wall-clock ms. */
  savedAt: number;
}

interface Manifest {
  hash: string;
  /** The model file's stamp when the files were saved (`modelStamp`); absent: no model file. */
  model?: string;
  slots: Record<string, SavedSlot>;
}

/** What a save or a restore did (logged; tests read it). */
export interface KvOutcome {
  /** Slot ids saved or restored. */
  done: number[];
  /** Slot ids (or -1 for the list itself) that failed, with why. */
  failed: { slot: number; reason: string }[];
  /** Cut by the deadline. */
  timedOut: boolean;
}

class Deadline extends Error {}

/** The most of a `/slots` answer read (one entry per slot; a save's or restore's is small). */
const MAX_ANSWER_MIB = 16;
const MAX_ANSWER_BYTES = MAX_ANSWER_MIB * 1024 * 1024;

/** Slot file names are qm's own: `slot-<id>.bin` (llama-server refuses paths). */
const slotFile = (id: number) => `slot-${id}.bin`;

export class KvSlots {
  private readonly fetch: Fetch;
  private readonly timers: Timers;

  constructor(
    private readonly id: string,
    private readonly kv: KeepKv,
    private readonly deps: KvSlotsDeps,
  ) {
    this.fetch = deps.fetch ?? fetch;
    this.timers = deps.timers ?? realTimers;
  }

  /**
   * Before a spawn: the folder exists, and files saved under another config are removed.
   * Synchronous, so it is done before llama-server can write there.
   */
  prepare(): void {
    try {
      mkdirSync(this.kv.dir, { recursive: true });
      const manifest = this.readManifest();
      const stamp = modelStamp(this.kv.modelFile);
      if (!this.matches(manifest, stamp)) {
        const files = readdirSync(this.kv.dir);
        for (const f of files) rmSync(join(this.kv.dir, f), { force: true, recursive: true });
        if (files.length > 0) {
          const why =
            manifest !== null && manifest.hash === this.kv.hash
              ? "its model file changed"
              : "its config changed";
          this.deps.log.info(
            `model "${this.id}": saved KV cache removed (${files.length} files; ${why})`,
          );
        }
        this.writeManifest(this.fresh(stamp));
      }
    } catch (err) {
      this.deps.log.warn(`model "${this.id}": keep_kv folder ${this.kv.dir}: ${message(err)}`);
    }
  }

  /** Saves every slot with a cached prompt of the server at `base`; never throws. */
  async save(base: string): Promise<KvOutcome> {
    const outcome: KvOutcome = { done: [], failed: [], timedOut: false };
    const started = this.timers.now();
    await this.bounded(outcome, async (call) => {
      const list = await call(`${base}/slots`, { method: "GET" });
      const slots = cachedSlots(list);
      if (slots === null) {
        outcome.failed.push({ slot: -1, reason: "GET /slots: not a list of slots" });
        return;
      }
      const stamp = modelStamp(this.kv.modelFile);
      const old = this.readManifest();
      // Slots saved under another config or model file are not kept beside these.
      const manifest = this.matches(old, stamp) && old !== null ? old : this.fresh(stamp);
      for (const slot of slots) {
        try {
          const answer = await call(`${base}/slots/${slot.id}?action=save`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ filename: slotFile(slot.id) }),
          });
          const tokens = numberField(answer, "n_saved") ?? slot.tokens;
          manifest.slots[String(slot.id)] = {
            file: slotFile(slot.id),
            tokens,
            savedAt: Date.now(),
          };
          outcome.done.push(slot.id);
        } catch (err) {
          if (err instanceof Deadline) {
            this.writeManifest(manifest);
            throw err;
          }
          outcome.failed.push({ slot: slot.id, reason: message(err) });
        }
      }
      this.writeManifest(manifest);
    });
    this.enforceCap();
    const ms = Math.round(this.timers.now() - started);
    this.report("saved", outcome, ms);
    return outcome;
  }

  /** Restores the slots the manifest lists into the server at `base`; never throws. */
  async restore(base: string): Promise<KvOutcome> {
    const outcome: KvOutcome = { done: [], failed: [], timedOut: false };
    const manifest = this.readManifest();
    // Never into another model: the file the server loaded must be the one the slots came from.
    if (manifest === null || !this.matches(manifest, modelStamp(this.kv.modelFile))) return outcome;
    const entries = Object.entries(manifest.slots).filter(([, s]) =>
      existsFile(join(this.kv.dir, s.file)),
    );
    if (entries.length === 0) return outcome;
    const started = this.timers.now();
    await this.bounded(outcome, async (call) => {
      for (const [id, slot] of entries) {
        try {
          await call(`${base}/slots/${id}?action=restore`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ filename: slot.file }),
          });
          outcome.done.push(Number(id));
        } catch (err) {
          if (err instanceof Deadline) throw err;
          outcome.failed.push({ slot: Number(id), reason: message(err) });
        }
      }
    });
    const ms = Math.round(this.timers.now() - started);
    this.report("restored", outcome, ms);
    return outcome;
  }

  /**
   * Runs `work` with a `call` that fetches JSON, every call cut at one shared deadline: a call
   * still running then is abandoned (its signal aborted, its answer never awaited).
   */
  private async bounded(
    outcome: KvOutcome,
    work: (call: (url: string, init: RequestInit) => Promise<unknown>) => Promise<void>,
  ): Promise<void> {
    const abort = new AbortController();
    let expire!: () => void;
    const expired = new Promise<never>((_, reject) => {
      expire = () => reject(new Deadline());
    });
    expired.catch(() => {});
    const timer = this.timers.set(() => {
      abort.abort();
      expire();
    }, this.kv.timeoutMs);
    const call = async (url: string, init: RequestInit): Promise<unknown> => {
      const res = await Promise.race([this.fetch(url, { ...init, signal: abort.signal }), expired]);
      const bytes = await Promise.race([readAtMost(res, MAX_ANSWER_BYTES), expired]);
      if (bytes === null)
        throw new Error(`HTTP ${res.status}: an answer over ${MAX_ANSWER_MIB} MiB`);
      const text = new TextDecoder().decode(bytes);
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${oneLine(text)}`);
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`not JSON: ${oneLine(text)}`);
      }
    };
    try {
      await work(call);
    } catch (err) {
      if (err instanceof Deadline || abort.signal.aborted) outcome.timedOut = true;
      else outcome.failed.push({ slot: -1, reason: message(err) });
    } finally {
      this.timers.clear(timer);
    }
  }

  /** Past `maxBytes`, the oldest files (by mtime) are removed, and their manifest entries. */
  private enforceCap(): void {
    try {
      const files = readdirSync(this.kv.dir)
        .filter((f) => f !== MANIFEST)
        .map((f) => {
          const st = statSync(join(this.kv.dir, f));
          return { f, size: st.size, mtime: st.mtimeMs };
        })
        .sort((a, b) => a.mtime - b.mtime);
      let total = files.reduce((n, x) => n + x.size, 0);
      if (total <= this.kv.maxBytes) return;
      const manifest = this.readManifest();
      for (const x of files) {
        if (total <= this.kv.maxBytes) break;
        rmSync(join(this.kv.dir, x.f), { force: true });
        total -= x.size;
        if (manifest) {
          for (const [id, s] of Object.entries(manifest.slots)) {
            if (s.file === x.f) delete manifest.slots[id];
          }
        }
        this.deps.log.info(`model "${this.id}": saved KV ${x.f} removed (keep_kv_max_mb)`);
      }
      if (manifest) this.writeManifest(manifest);
    } catch (err) {
      this.deps.log.warn(`model "${this.id}": keep_kv size cap: ${message(err)}`);
    }
  }

  private report(what: "saved" | "restored", o: KvOutcome, ms: number): void {
    const { log } = this.deps;
    if (o.done.length > 0) {
      log.info(`model "${this.id}": KV of slot ${o.done.join(", ")} ${what} in ${ms} ms`);
    }
    for (const f of o.failed) {
      const which = f.slot < 0 ? "" : ` slot ${f.slot}`;
      log.warn(`model "${this.id}": KV${which} not ${what} (${f.reason}); carrying on cold`);
    }
    if (o.timedOut) {
      log.warn(
        `model "${this.id}": KV ${what === "saved" ? "save" : "restore"} abandoned after ${this.kv.timeoutMs} ms (keep_kv_timeout_s); carrying on cold`,
      );
    }
  }

  /** The files were saved under this config and this model file. */
  private matches(manifest: Manifest | null, stamp: string | null): boolean {
    return (
      manifest !== null && manifest.hash === this.kv.hash && (manifest.model ?? null) === stamp
    );
  }

  private fresh(stamp: string | null): Manifest {
    return stamp === null
      ? { hash: this.kv.hash, slots: {} }
      : { hash: this.kv.hash, model: stamp, slots: {} };
  }

  private readManifest(): Manifest | null {
    try {
      const raw = JSON.parse(readFileSync(join(this.kv.dir, MANIFEST), "utf8")) as unknown;
      if (!isRecord(raw) || typeof raw.hash !== "string" || !isRecord(raw.slots)) return null;
      const slots: Record<string, SavedSlot> = {};
      for (const [id, s] of Object.entries(raw.slots)) {
        if (!/^\d+$/.test(id) || !isRecord(s) || s.file !== slotFile(Number(id))) continue;
        slots[id] = {
          file: s.file,
          tokens: typeof s.tokens === "number" ? s.tokens : 0,
          savedAt: typeof s.savedAt === "number" ? s.savedAt : 0,
        };
      }
      return typeof raw.model === "string"
        ? { hash: raw.hash, model: raw.model, slots }
        : { hash: raw.hash, slots };
    } catch {
      return null;
    }
  }

  private writeManifest(manifest: Manifest): void {
    try {
      const path = join(this.kv.dir, MANIFEST);
      writeFileSync(`${path}.tmp`, JSON.stringify(manifest));
      // Atomic: a reader sees the old manifest or the new one.
      renameSync(`${path}.tmp`, path);
    } catch (err) {
      this.deps.log.warn(`model "${this.id}": keep_kv manifest: ${message(err)}`);
    }
  }
}

/** The slots of a `GET /slots` answer that hold a cached prompt, or null when it is no list. */
export function cachedSlots(body: unknown): { id: number; tokens: number }[] | null {
  if (!Array.isArray(body)) return null;
  const out: { id: number; tokens: number }[] = [];
  for (const s of body) {
    if (!isRecord(s) || !Number.isSafeInteger(s.id) || (s.id as number) < 0) continue;
    const tokens = typeof s.n_prompt_tokens === "number" ? s.n_prompt_tokens : 0;
    if (tokens > 0) out.push({ id: s.id as number, tokens });
  }
  return out;
}

function numberField(body: unknown, key: string): number | null {
  return isRecord(body) && typeof body[key] === "number" ? (body[key] as number) : null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function existsFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function oneLine(text: string): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > 200 ? `${t.slice(0, 200)}…` : t;
}
