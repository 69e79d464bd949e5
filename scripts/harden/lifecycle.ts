/**
 * Fault suite, qm side, and the orphan checks: qm stopped by SIGTERM and by SIGINT with models
 * loaded and streams in flight (they must finish: the shutdown grace covers them), and qm
 * SIGKILLed mid-stream (every stream must fail visibly, never end cleanly) followed by a fresh
 * qm on the same `server.state_dir`, which must serve the same models again and reap what the
 * dead qm left. One model spawns grandchildren, one in its process group and one that left it
 * with setsid, as wrapper scripts and multi-process servers do.
 */
import { join } from "node:path";
import { log, shellQuote } from "../bench/util.ts";
import { LOST, Tally } from "./faults.ts";
import {
  configToml,
  countLeftovers,
  demoCmd,
  demoName,
  expectedText,
  load,
  QM_BIN,
  type Qm,
  startQm,
  stopQm,
} from "./qm.ts";
import { type Api, apiPath, chatBody, exchange, type Kind, type Outcome } from "./verdict.ts";

const TOKENS = 60;
const FLAGS = `--tokens ${TOKENS} --token-ms 10`;

/** `sh` running the demo with two grandchildren: `sleep` in its group, `setsid sleep` out of it. */
function treeCmd(model: string): string {
  const script = `"$0" demo-upstream --port "$1" --name "$2" ${FLAGS} & sleep 300 & setsid sleep 300 & wait`;
  return `sh -c ${shellQuote(script)} ${shellQuote(QM_BIN)} \${PORT} ${shellQuote(demoName(model))}`;
}

export const LIFE_MODELS = ["l-plain", "l-tree"] as const;

export function lifecycleConfig(stateDir: string): string {
  const body = `[groups.life]
members = ${JSON.stringify(LIFE_MODELS)}
swap = false
exclusive = false

[models.l-plain]
cmd = ${JSON.stringify(demoCmd("l-plain", FLAGS))}

[models.l-tree]
cmd = ${JSON.stringify(treeCmd("l-tree"))}
`;
  return configToml({ stateDir, body });
}

/** Two streams (one per API) and a plain request on each model; resolves once all streams flow. */
async function inFlight(qm: Qm): Promise<[string, Promise<Outcome>][]> {
  const shapes: [Api, boolean][] = [
    ["openai", true],
    ["anthropic", true],
    ["openai", false],
  ];
  let flowing = 0;
  const want = LIFE_MODELS.length * 2;
  let go: () => void = () => {};
  const started = new Promise<void>((r) => {
    go = r;
  });
  const out: [string, Promise<Outcome>][] = [];
  for (const model of LIFE_MODELS) {
    for (const [api, stream] of shapes) {
      const o = exchange({
        url: qm.url + apiPath(api),
        api,
        stream,
        body: chatBody(model, stream, TOKENS),
        expected: expectedText(model, TOKENS),
        boundMs: 15_000,
        onToken: (n) => {
          if (n === 1 && ++flowing === want) go();
        },
      });
      out.push([`${model} ${api} ${stream ? "stream" : "non-stream"}`, o]);
    }
  }
  const timer = setTimeout(go, 5000);
  await started;
  clearTimeout(timer);
  await Bun.sleep(20);
  return out;
}

async function loadAll(qm: Qm): Promise<void> {
  for (const m of LIFE_MODELS) {
    if ((await load(qm, m)) === null) log(`lifecycle: ${m} did not load on qm ${qm.name}`);
  }
}

/** For a request that must have been served in full. */
const NOT_OK: readonly Kind[] = ["error", ...LOST];
/** After qm itself was SIGKILLed, a cut connection is the error the client sees. */
const KILLED_LOST: readonly Kind[] = ["truncated", "wrong", "hung", "aborted"];

/** SIGTERM or SIGINT with work in flight: the work finishes, nothing is left running. */
async function graceful(dir: string, signal: "SIGTERM" | "SIGINT", t: Tally): Promise<number> {
  const qm = await startQm(
    dir,
    `life-${signal.toLowerCase()}`,
    lifecycleConfig(join(dir, "state-g")),
  );
  await loadAll(qm);
  const reqs = await inFlight(qm);
  const stopping = stopQm(qm, signal);
  for (const [what, p] of reqs) t.add(`in flight at qm ${signal}`, what, await p, NOT_OK);
  const stopped = await stopping;
  if (stopped.exitCode !== 0) log(`lifecycle: qm exited with ${stopped.exitCode} after ${signal}`);
  log(`lifecycle: qm ${signal}: ${stopped.orphans.length} orphan(s)`);
  return stopped.orphans.length;
}

/**
 * qm SIGKILLed mid-stream, then a fresh qm on the same config and state dir: the dead qm's
 * processes must be gone once the fresh one is up (it reaps them), and it must serve again.
 */
async function killed(dir: string, t: Tally): Promise<number> {
  const toml = lifecycleConfig(join(dir, "state-k"));
  const first = await startQm(dir, "life-kill", toml);
  await loadAll(first);
  const reqs = await inFlight(first);
  await stopQm(first, "SIGKILL");
  for (const [what, p] of reqs) t.add("in flight at qm SIGKILL", what, await p, KILLED_LOST);
  const fresh = await startQm(dir, "life-fresh", toml);
  // The fresh qm has a few seconds to reap what the dead one left.
  const left = await countLeftovers(first, 3000);
  log(`lifecycle: qm SIGKILL: ${left.length} orphan(s) 3 s after a fresh qm started`);
  for (const model of LIFE_MODELS) {
    for (const api of ["openai", "anthropic"] as Api[]) {
      const o = await exchange({
        url: fresh.url + apiPath(api),
        api,
        stream: false,
        body: chatBody(model, false, 4),
        expected: expectedText(model, 4),
        boundMs: 15_000,
      });
      t.add("fresh qm after qm SIGKILL", `${model} ${api}`, o, NOT_OK);
    }
  }
  const stopped = await stopQm(fresh, "SIGTERM");
  log(`lifecycle: fresh qm SIGTERM: ${stopped.orphans.length} orphan(s)`);
  return left.length + stopped.orphans.length;
}

/** Runs the three stops; `orphans` hears each count as soon as it is known. */
export async function lifecycleSuite(dir: string, orphans: (n: number) => void): Promise<Tally> {
  const tally = new Tally();
  orphans(await graceful(dir, "SIGTERM", tally));
  orphans(await graceful(dir, "SIGINT", tally));
  orphans(await killed(dir, tally));
  return tally;
}
