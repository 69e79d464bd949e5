import { createParser } from "eventsource-parser";
import type { StatusJson } from "../api/status-json.ts";
import { realTimers } from "../shared/timer.ts";
import { parse, UsageError } from "./args.ts";
import { configPath, loadForCli } from "./config-path.ts";
import { LOAD_HELP, LOGS_HELP, STATUS_HELP, UNLOAD_HELP } from "./help.ts";
import { renderStatus } from "./status-table.ts";

const CLIENT_OPTIONS = {
  url: { type: "string" },
  config: { type: "string", short: "c" },
  json: { type: "boolean" },
} as const;

interface Target {
  url: string;
  key: string | null;
}

/** The URL a client on this box reaches a listen address at (a wildcard: loopback). */
export function listenUrl(listen: string): string {
  return `http://${listen.replace(/^0\.0\.0\.0:/, "127.0.0.1:").replace(/^\[::\]:/, "[::1]:")}`;
}

/** Where the running server is: --url, $QM_URL, else the config's first listen address. */
function target(values: { url?: string; config?: string }): Target {
  let url = values.url ?? process.env.QM_URL;
  let key = process.env.QM_API_KEY ?? null;
  if (!url || key === null) {
    const loaded = loadForCli(configPath(values.config));
    if (loaded.ok) {
      const listen = loaded.config.server.listen[0] ?? "127.0.0.1:8080";
      url ??= listenUrl(listen);
      key ??= loaded.config.server.apiKeys[0] ?? null;
    }
  }
  return { url: (url ?? "http://127.0.0.1:8080").replace(/\/+$/, ""), key };
}

async function open(t: Target, method: string, path: string): Promise<Response> {
  try {
    return await fetch(t.url + path, {
      method,
      headers: t.key ? { authorization: `Bearer ${t.key}` } : {},
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot reach qm at ${t.url} (${why}); is 'qm serve' running? (--url to point elsewhere)`,
    );
  }
}

/** A failed answer: its status, and the message of its error envelope (or its text). */
class ApiError extends Error {
  constructor(
    readonly request: string,
    readonly status: number,
    readonly detail: string,
  ) {
    super(`${request}: ${status} ${detail}`);
  }
}

/** The error a failed answer carries, in words. */
function failure(method: string, path: string, status: number, text: string): ApiError {
  let msg = text;
  try {
    msg = (JSON.parse(text) as { error?: { message?: string } })?.error?.message ?? text;
  } catch {
    // not JSON: the text as it is
  }
  return new ApiError(`${method} ${path}`, status, msg);
}

/**
 * A 409 for a leased model tells an HTTP client to add `?force=true`; from the command line
 * that is `--force`.
 */
export function forceHint(err: ApiError, model: string | undefined): ApiError {
  if (err.status !== 409) return err;
  const command = `qm unload${model ? ` ${model}` : ""} --force`;
  const detail = err.detail.includes("?force=true")
    ? err.detail.replace(/add \?force=true|\?force=true/, `run '${command}'`)
    : `${err.detail}; '${command}' revokes the leases`;
  return new ApiError(err.request, err.status, detail);
}

async function call(t: Target, method: string, path: string): Promise<unknown> {
  const res = await open(t, method, path);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  if (!res.ok) throw failure(method, path, res.status, text);
  return body;
}

export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parse(
    argv,
    { ...CLIENT_OPTIONS, watch: { type: "boolean", short: "w" } },
    false,
  );
  if (values.help) {
    process.stdout.write(STATUS_HELP);
    return 0;
  }
  if (values.watch) return watchStatus(target(values), values.json === true);
  const status = (await call(target(values), "GET", "/api/status")) as StatusJson;
  process.stdout.write(values.json ? `${JSON.stringify(status, null, 2)}\n` : renderStatus(status));
  return 0;
}

export async function loadCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, CLIENT_OPTIONS);
  if (values.help) {
    process.stdout.write(LOAD_HELP);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("qm load takes exactly one MODEL");
  const model = positionals[0]!;
  const out = (await call(
    target(values),
    "POST",
    `/api/models/${encodeURIComponent(model)}/load`,
  )) as {
    model: string;
    wait_ms: number;
  };
  process.stdout.write(`${out.model} is ready (waited ${out.wait_ms} ms)\n`);
  return 0;
}

export async function unloadCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { ...CLIENT_OPTIONS, force: { type: "boolean" } });
  if (values.help) {
    process.stdout.write(UNLOAD_HELP);
    return 0;
  }
  if (positionals.length > 1) throw new UsageError("qm unload takes at most one MODEL");
  const model = positionals[0];
  const base = model ? `/api/models/${encodeURIComponent(model)}/unload` : "/api/models/unload";
  const path = values.force ? `${base}?force=true` : base;
  try {
    await call(target(values), "POST", path);
  } catch (err) {
    throw err instanceof ApiError ? forceHint(err, model) : err;
  }
  process.stdout.write(model ? `unloading ${model}\n` : "unloading every model\n");
  return 0;
}

/**
 * `qm logs [MODEL] [-f]`: a model's kept output lines (every model's, each prefixed with its
 * id, when none is named); `-f` then follows new lines as they come, until Ctrl-C.
 */
export async function logsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    ...CLIENT_OPTIONS,
    follow: { type: "boolean", short: "f" },
  });
  if (values.help) {
    process.stdout.write(LOGS_HELP);
    return 0;
  }
  if (positionals.length > 1) throw new UsageError("qm logs takes at most one MODEL");
  const t = target(values);
  const named = positionals[0];
  const ids = named
    ? [named]
    : ((await call(t, "GET", "/api/status")) as StatusJson).models.map((m) => m.id);
  const prefix = (id: string) => (named ? "" : `[${id}] `);
  if (!values.follow) {
    for (const id of ids) {
      const res = await open(t, "GET", logsPath(id));
      const text = await res.text();
      if (!res.ok) throw failure("GET", logsPath(id), res.status, text);
      for (const line of text.split("\n")) {
        if (line !== "") process.stdout.write(`${prefix(id)}${line}\n`);
      }
    }
    return 0;
  }
  await Promise.all(ids.map((id) => followLogs(t, id, prefix(id))));
  return 0;
}

function logsPath(id: string): string {
  return `/api/models/${encodeURIComponent(id)}/logs`;
}

/** Prints each `log` event of a model's `?follow=1` stream until it ends. */
async function followLogs(t: Target, id: string, prefix: string): Promise<void> {
  const path = `${logsPath(id)}?follow=1`;
  const res = await open(t, "GET", path);
  if (!res.ok || !res.body) throw failure("GET", path, res.status, await res.text());
  const parser = createParser({
    onEvent: (e) => {
      if (e.event === "log") process.stdout.write(`${prefix}${e.data}\n`);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
}

/** Redraws at most this often, however fast events come. */
const REDRAW_MS = 100;

/**
 * `qm status --watch`: the status, redrawn from `/api/events` as it changes (a terminal gets
 * it in place; a pipe gets each snapshot in turn), until Ctrl-C or the server goes away.
 */
async function watchStatus(t: Target, json: boolean): Promise<number> {
  const res = await open(t, "GET", "/api/events");
  if (!res.ok || !res.body) throw failure("GET", "/api/events", res.status, await res.text());
  const tty = process.stdout.isTTY === true;
  let pending: unknown = null;
  /** A redraw under way: the last one is finished before the command ends. */
  let drawing: Promise<void> = Promise.resolve();
  const refresh = (ms = REDRAW_MS) => {
    if (pending !== null) return;
    pending = realTimers.set(() => {
      pending = null;
      drawing = call(t, "GET", "/api/status").then(
        (s) => draw(s as StatusJson),
        () => {}, // the stream's end says the server is gone
      );
    }, ms);
  };
  const draw = (status: StatusJson) => {
    const text = json ? `${JSON.stringify(status)}\n` : renderStatus(status);
    process.stdout.write(tty ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
    // No event marks a load's progress: while one runs, look again each second.
    if (status.models.some((m) => m.load !== null)) refresh(1000);
  };
  const parser = createParser({
    onEvent: (e) => {
      if (e.event === "status") draw(JSON.parse(e.data) as StatusJson);
      else refresh();
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
  } catch {
    // the connection broke
  }
  if (pending !== null) realTimers.clear(pending);
  await drawing;
  process.stderr.write(`qm: the server at ${t.url} closed the event stream\n`);
  return 1;
}
