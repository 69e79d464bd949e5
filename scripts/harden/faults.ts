/**
 * Fault suite, upstream side: model servers that are SIGKILLed mid-stream, crash at start or
 * mid-answer, answer 5xx, never become healthy, die while idle, hang before their headers or
 * stall mid-stream (the last two only when the demo upstream has those flags). Every request
 * a fault touches must end in an error the client can see: an HTTP error in its API's
 * envelope, or an error frame in its stream — never a clean-looking truncated end, a cut
 * connection, a wrong answer or a hang.
 */
import { readFileSync } from "node:fs";
import { log } from "../bench/util.ts";
import { cmdline, RUN } from "./procs.ts";
import {
  configToml,
  demoCmd,
  demoFlags,
  expectedText,
  load,
  type Qm,
  status,
  within,
} from "./qm.ts";
import { type Api, apiPath, chatBody, exchange, type Kind, type Outcome } from "./verdict.ts";

/** Outcomes per fault; `lost` = affected requests that did not end in a proper error. */
export class Tally {
  tried = 0;
  lost = 0;
  private by = new Map<string, { tried: number; lost: number; kinds: string[]; ex?: string }>();

  /** `lostKinds`: the outcomes that count as lost for this fault. */
  add(fault: string, what: string, o: Outcome, lostKinds: readonly Kind[] = LOST): void {
    const f = this.by.get(fault) ?? { tried: 0, lost: 0, kinds: [] };
    this.by.set(fault, f);
    f.tried++;
    this.tried++;
    f.kinds.push(o.kind);
    if (!lostKinds.includes(o.kind)) return;
    f.lost++;
    this.lost++;
    f.ex ??= `${what}: ${o.kind} ${o.status} ${o.detail}`.slice(0, 300);
  }

  report(): void {
    for (const [fault, f] of this.by) {
      const kinds: Record<string, number> = {};
      for (const k of f.kinds) kinds[k] = (kinds[k] ?? 0) + 1;
      log(`faults: ${fault}: ${f.lost}/${f.tried} lost ${JSON.stringify(kinds)}`);
      if (f.ex) log(`faults: ${fault}: first lost: ${f.ex}`);
    }
  }
}

/** With qm alive, an affected request must end in `error`; `ok` means the fault missed it. */
export const LOST: readonly Kind[] = ["cut", "truncated", "wrong", "hung", "aborted"];

const VARIANTS: [Api, boolean][] = [
  ["openai", false],
  ["openai", true],
  ["anthropic", false],
  ["anthropic", true],
];

const KILL_TOKENS = 300;

export function faultsConfig(stateDir: string) {
  const flags = demoFlags();
  const models: [string, string, string?][] = [
    ["f-kill", `--tokens ${KILL_TOKENS} --token-ms 10`],
    ["f-crashstart", "--crash-at-start"],
    ["f-midcrash", "--tokens 40 --token-ms 5 --crash-after-tokens 3"],
    ["f-500", "--fail-status 500"],
    ["f-503", "--fail-status 503"],
    ["f-hanghealth", "--hang-health"],
    ["f-exit", "--tokens 8 --token-ms 0 --exit-after-ms 800"],
    ["f-lease", "--tokens 4 --token-ms 0"],
  ];
  if (flags.hangBeforeHeaders) {
    models.push(["f-hanghead", "--hang-before-headers", "first_byte_timeout_s = 2"]);
  }
  if (flags.stallAfterTokens) {
    models.push([
      "f-stall",
      "--tokens 40 --token-ms 5 --stall-after-tokens 3",
      "stall_timeout_s = 2",
    ]);
  }
  const body = models
    .map(
      ([id, f, extra]) => `[models.${id}]\ncmd = ${JSON.stringify(demoCmd(id, f))}\n${extra ?? ""}`,
    )
    .join("\n");
  // One group where nothing evicts anything: each fault stays on its own model.
  const members = JSON.stringify(models.map(([id]) => id));
  const groups = `[groups.faults]\nmembers = ${members}\nswap = false\nexclusive = false\n`;
  return { toml: configToml({ stateDir, healthTimeoutS: 2, body: `${groups}\n${body}` }), flags };
}

function probe(qm: Qm, model: string, api: Api, stream: boolean, extra = {}) {
  return exchange({
    url: qm.url + apiPath(api),
    api,
    stream,
    body: chatBody(model, stream, KILL_TOKENS),
    boundMs: 15_000,
    ...extra,
  });
}

const label = (api: Api, stream: boolean, warm: boolean) =>
  `${api} ${stream ? "stream" : "non-stream"} ${warm ? "warm" : "cold"}`;

/** A process that exists and is not a zombie (a dead model qm has not reaped yet). */
function runningPid(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X" && cmdline(pid).includes(RUN);
  } catch {
    return false;
  }
}

/** Loads f-kill, retrying briefly; a "ready" model whose process is dead is unloaded first. */
async function loadKillable(qm: Qm): Promise<number | null> {
  for (let attempt = 0; attempt < 4; attempt++) {
    const pid = await load(qm, "f-kill");
    if (pid !== null && runningPid(pid)) return pid;
    if (pid !== null) {
      log(`faults: qm reports f-kill ready with pid ${pid}, which is not running; unloading it`);
      await fetch(`${qm.url}/api/models/f-kill/unload`, { method: "POST" }).catch(() => {});
    }
    await Bun.sleep(200);
  }
  return null;
}

/**
 * Rounds of: load f-kill, start two streams and a plain request, SIGKILL the model once the
 * streams flow. Then the fault is over and qm must serve f-kill again: one more request per
 * round must succeed (a model qm still believes ready while it is dead fails it).
 */
async function killMidStream(qm: Qm, t: Tally, rounds: number, deadline: number) {
  let stale = 0;
  for (let i = 0; i < rounds && Date.now() < deadline; i++) {
    const pid = await loadKillable(qm);
    if (pid === null) {
      log(`faults: f-kill did not load for round ${i + 1}`);
      continue;
    }
    let flowing = 0;
    let go: () => void = () => {};
    const started = new Promise<void>((r) => {
      go = r;
    });
    const onToken = (n: number) => {
      if (n === 1 && ++flowing === 2) go();
    };
    const plain: Api = i % 2 ? "anthropic" : "openai";
    const reqs: [string, Promise<Outcome>][] = [
      ["openai stream", probe(qm, "f-kill", "openai", true, { onToken })],
      ["anthropic stream", probe(qm, "f-kill", "anthropic", true, { onToken })],
      [`${plain} non-stream`, probe(qm, "f-kill", plain, false)],
    ];
    await within(started, 5000);
    await Bun.sleep(20); // the non-streamed request is in flight too by now
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      log(`faults: f-kill pid ${pid} was gone before the kill`);
    }
    for (const [what, p] of reqs) t.add("upstream SIGKILL mid-answer", what, await p);
    // qm should notice the death at once; give it a moment, then ask again.
    const until = Date.now() + 3000;
    let noticed = false;
    while (!noticed && Date.now() < until) {
      const m = (await status(qm)).models.find((x) => x.id === "f-kill");
      noticed = m?.state !== "ready" || m.pid !== pid;
      if (!noticed) await Bun.sleep(50);
    }
    if (!noticed) stale++;
    const again = await exchange({
      url: `${qm.url}/v1/chat/completions`,
      api: "openai",
      stream: false,
      body: chatBody("f-kill", false, 4),
      expected: expectedText("f-kill", 4),
      boundMs: 15_000,
    });
    t.add("request after upstream SIGKILL", plain, again, NOT_OK);
  }
  if (stale > 0)
    log(
      `faults: ${stale} time(s) qm still showed f-kill ready with its dead pid 3 s after the kill`,
    );
}

/** For requests after a fault is over: anything but a correct answer is lost. */
const NOT_OK: readonly Kind[] = ["error", ...LOST];

/** Each of the four request shapes against a model that fails, cold and (where it can be) warm. */
async function failing(qm: Qm, t: Tally, fault: string, model: string, warmToo: boolean) {
  for (const warm of warmToo ? [false, true] : [false]) {
    for (const [api, stream] of VARIANTS) {
      if (warm) await load(qm, model);
      else await fetch(`${qm.url}/api/models/${model}/unload`, { method: "POST" }).catch(() => {});
      t.add(fault, label(api, stream, warm), await probe(qm, model, api, stream));
    }
  }
}

/** All four shapes at once against one model (each costs a timeout, so they share it). */
async function concurrent(qm: Qm, t: Tally, fault: string, model: string, warm: boolean) {
  if (warm) await load(qm, model);
  const outs = await Promise.all(VARIANTS.map(([api, stream]) => probe(qm, model, api, stream)));
  outs.forEach((o, i) => {
    const [api, stream] = VARIANTS[i] as [Api, boolean];
    t.add(fault, label(api, stream, warm), o);
  });
}

/** A model that died while idle: the next requests must be served (or fail properly). */
async function diedIdle(qm: Qm, t: Tally) {
  for (const [api, stream] of VARIANTS) {
    await load(qm, "f-exit");
    await Bun.sleep(1000); // it exits 800 ms after it started
    const o = await exchange({
      url: qm.url + apiPath(api),
      api,
      stream,
      body: chatBody("f-exit", stream, 8),
      expected: expectedText("f-exit", 8),
      boundMs: 15_000,
    });
    // Served again (ok) or a proper error: both are right here.
    t.add("upstream exited while idle", label(api, stream, false), o);
  }
}

/**
 * An unload asked for while a lease holds the model: whatever qm decides (unload later, refuse,
 * serve), a request for that model must get an answer, not wait out the lease.
 */
async function unloadWhileLeased(qm: Qm, t: Tally) {
  const res = await fetch(`${qm.url}/api/models/f-lease/lease`, {
    method: "POST",
    body: JSON.stringify({ ttl_s: 60 }),
  }).catch(() => null);
  const lease = res?.ok ? ((await res.json()) as { lease: string }).lease : null;
  if (!lease) {
    log("faults: could not lease f-lease; skipped the unload-while-leased check");
    return;
  }
  await fetch(`${qm.url}/api/models/f-lease/unload`, { method: "POST" }).catch(() => {});
  const outs = await Promise.all(
    (["openai", "anthropic"] as Api[]).map((api) =>
      exchange({
        url: qm.url + apiPath(api),
        api,
        stream: false,
        body: chatBody("f-lease", false, 4),
        boundMs: 5000,
      }),
    ),
  );
  for (const [i, o] of outs.entries()) {
    t.add("request after unload of a leased model", i ? "anthropic" : "openai", o);
  }
  await fetch(`${qm.url}/api/models/f-lease/lease/${lease}`, { method: "DELETE" }).catch(() => {});
}

export async function faultsSuite(qm: Qm, flags: ReturnType<typeof demoFlags>, deadline: number) {
  const t = new Tally();
  await killMidStream(qm, t, 50, deadline - 30_000);
  await failing(qm, t, "upstream crash at start", "f-crashstart", false);
  await failing(qm, t, "upstream crash mid-answer", "f-midcrash", true);
  await failing(qm, t, "upstream 500", "f-500", true);
  await failing(qm, t, "upstream 503", "f-503", true);
  await concurrent(qm, t, "upstream never healthy", "f-hanghealth", false);
  await diedIdle(qm, t);
  await unloadWhileLeased(qm, t);
  if (flags.hangBeforeHeaders)
    await concurrent(qm, t, "upstream hangs before headers", "f-hanghead", true);
  else
    log("faults: skipped upstream hang before headers: demo-upstream lacks --hang-before-headers");
  if (flags.stallAfterTokens)
    await concurrent(qm, t, "upstream stalls mid-stream", "f-stall", true);
  else log("faults: skipped upstream stall mid-stream: demo-upstream lacks --stall-after-tokens");
  return t;
}
