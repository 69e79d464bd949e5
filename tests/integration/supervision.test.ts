/**
 * Nothing a model started outlives qm: descendants that left the model's process group or
 * session, orphans reparented to qm (child subreaper), and what a SIGKILLed qm left behind
 * (found by the next qm from its run file). Also: SIGHUP does not stop qm.
 */
import { afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, status, until } from "../support/e2e.ts";
import {
  exists,
  ownConfig,
  pidFrom,
  type RunFileJson,
  runFiles,
  running,
  statFields,
} from "../support/own-config.ts";
import { type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

const servers: QmServer[] = [];
const strays: number[] = [];

afterEach(async () => {
  for (const qm of servers.splice(0)) {
    if (qm.proc.exitCode === null && qm.proc.signalCode === null) await qm.stop();
  }
  // A failed test must not leave its sleepers behind.
  for (const pid of strays.splice(0)) {
    try {
      if (running(pid)) process.kill(pid, "SIGKILL");
    } catch {}
  }
});

async function serveOwn(body: string | ((dir: string) => string), server = "") {
  const cfg = ownConfig(body, server);
  const qm = await startQm(cfg.path);
  servers.push(qm);
  return { qm, ...cfg };
}

/** The model `tree`: the demo behind a shell, plus a `setsid` sleeper it reports. */
function treeModel(dir: string): string {
  const gc = join(dir, "gc.pid");
  return `[models.tree]\ncmd = "sh -c '\${demo} & setsid sleep 1000 & echo $! > ${gc}; wait'"\n`;
}

async function waitPid(path: string): Promise<number> {
  const pid = await until(
    async () => pidFrom(path),
    (p) => p !== null,
    5000,
  );
  strays.push(pid!);
  return pid!;
}

const unload = (url: string, id: string) =>
  fetch(`${url}/api/models/${id}/unload`, { method: "POST" }).then((r) => r.status);

const stateOf = async (url: string, id: string) =>
  (await status(url)).models.find((m) => m.id === id)?.state;

describe("a model's descendants", () => {
  test("a normal stop ends a grandchild that left the session (setsid)", async () => {
    const { qm, dir, stateDir } = await serveOwn(treeModel);
    expect((await chat(qm.url, "tree")).status).toBe(200);
    const leader = (await status(qm.url)).models[0]!.pid!;
    const gc = await waitPid(join(dir, "gc.pid"));
    expect(running(gc)).toBe(true);
    // It really left: a session of its own, so a process group signal would miss it.
    expect(Number(statFields(gc)[3])).not.toBe(leader);
    expect(await unload(qm.url, "tree")).toBe(200);
    await until(
      () => stateOf(qm.url, "tree"),
      (s) => s === "stopped",
    );
    expect(running(gc)).toBe(false);
    // A clean shutdown takes its run file along.
    expect(await qm.stop()).toBe(0);
    expect(runFiles(stateDir).has(qm.proc.pid)).toBe(false);
  });

  test("an orphan is reparented to qm (child subreaper), killed on stop and reaped", async () => {
    // The subshell starts the sleeper and exits at once: the sleeper's parent is gone.
    const { qm, dir } = await serveOwn(
      (d) =>
        `[models.orphans]\ncmd = "sh -c '(setsid sleep 1000 & echo $! > ${d}/orphan.pid); exec \${demo}'"\n`,
    );
    expect((await chat(qm.url, "orphans")).status).toBe(200);
    const orphan = await waitPid(join(dir, "orphan.pid"));
    await until(
      async () => Number(statFields(orphan)[1]),
      (ppid) => ppid === qm.proc.pid,
      3000,
    );
    expect(await unload(qm.url, "orphans")).toBe(200);
    await until(
      () => stateOf(qm.url, "orphans"),
      (s) => s === "stopped",
    );
    // Not even a zombie: qm, its parent now, reaped it.
    await until(
      async () => exists(orphan),
      (there) => !there,
      2000,
    );
  });
});

describe("after qm itself was SIGKILLed", () => {
  test("the next qm on the same state_dir reaps what it left, logs it, and removes its file", async () => {
    const first = await serveOwn(treeModel);
    expect((await chat(first.qm.url, "tree")).status).toBe(200);
    const gc = await waitPid(join(first.dir, "gc.pid"));
    // The run file lists the sleeper once a scan (every second) has seen it.
    const file = await until(
      async () => runFiles(first.stateDir).get(first.qm.proc.pid),
      (f) => f !== undefined && listed(f).includes(gc),
      5000,
    );
    const pids = listed(file!).filter((p) => p !== file!.models[0]!.leader.pid);
    strays.push(...pids);
    const leader = file!.models[0]!.leader.pid;
    const inGroup = pids.filter((p) => Number(statFields(p)[2]) === leader);
    expect(inGroup.length).toBeGreaterThan(0);
    first.qm.proc.kill("SIGKILL");
    await first.qm.proc.exited;
    // The death watch ends the model's group; what left it (the setsid sleeper) is left running.
    await until(
      async () => inGroup.filter(running),
      (left) => left.length === 0,
      3000,
    );
    expect(running(gc)).toBe(true);

    const second = await startQm(first.path);
    servers.push(second);
    for (const pid of pids) expect(running(pid)).toBe(false);
    const port = file!.models[0]!.port;
    expect(second.log()).toContain(`reaped pid ${gc} (sleep) of model "tree" (port ${port})`);
    expect(second.log()).toContain(`left running by qm pid ${first.qm.proc.pid}`);
    const files = runFiles(first.stateDir);
    expect(files.has(first.qm.proc.pid)).toBe(false);
    expect(files.has(second.proc.pid)).toBe(true);
    expect((await chat(second.url, "tree")).status).toBe(200);
  });
});

describe("signals", () => {
  test("SIGHUP leaves qm serving", async () => {
    const { qm } = await serveOwn(`[models.one]\ncmd = "\${demo}"\n`);
    qm.proc.kill("SIGHUP");
    await until(
      async () => qm.log(),
      (log) => log.includes("SIGHUP"),
      3000,
    );
    expect(qm.log()).toContain("SIGHUP: reloading the config");
    const res = await chat(qm.url, "one");
    expect(res.status).toBe(200);
    await res.json();
    expect(qm.proc.exitCode).toBeNull();
    expect(await qm.stop()).toBe(0);
  });
});

function listed(file: RunFileJson): number[] {
  return file.models.flatMap((m) => [m.leader.pid, ...m.descendants.map((d) => d.pid)]);
}
