/**
 * A listener's port is qm's alone: a second `qm serve` on a port a running qm holds, or on one
 * any other program holds (even one that set SO_REUSEPORT, as Bun's servers do by default),
 * exits 1 naming the port, the key and the holder, and leaves no run file behind.
 */
import { afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { within } from "../../src/shared/timer.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { status } from "../support/e2e.ts";
import { freePort } from "../support/net.ts";
import { runFiles } from "../support/own-config.ts";
import { QM, type QmServer, ROOT, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

const servers: QmServer[] = [];
const holders: { stop(force?: boolean): unknown }[] = [];

afterEach(async () => {
  for (const qm of servers.splice(0)) expect(await qm.stop()).toBe(0);
  for (const h of holders.splice(0)) h.stop(true);
});

/** A config with the given `[server]` lines and its own state dir. */
function config(server: string): { path: string; stateDir: string } {
  const dir = mkdtempSync(join(tmpdir(), "qm-listen-"));
  const stateDir = join(dir, "state");
  const path = join(dir, "quartermaster.toml");
  writeFileSync(
    path,
    `[server]\n${server}\nstate_dir = "${stateDir}"\nshutdown_timeout_s = 3\n\n` +
      `[models.one]\ncmd = "\${QM_BIN} demo-upstream --port \${PORT} --name one"\n`,
  );
  return { path, stateDir };
}

async function serveFails(path: string): Promise<{ code: number; err: string }> {
  const proc = Bun.spawn([QM, "serve", "-c", path], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const err = proc.stderr.text();
  // A real process on real time: one that does not exit in 10 s is killed (and the test fails).
  if (!(await within(proc.exited, 10_000))) proc.kill("SIGKILL");
  return { code: await proc.exited, err: await err };
}

describe("a listener's port is taken", () => {
  test("a second qm on a running qm's port exits 1 naming the port and that qm", async () => {
    const port = freePort();
    const first = await startQm(config(`listen = ["127.0.0.1:${port}"]`).path);
    servers.push(first);
    const second = config(`listen = ["127.0.0.1:${port}"]`);
    const { code, err } = await serveFails(second.path);
    expect(code).toBe(1);
    expect(err).toContain(
      `cannot start: port ${port} is already in use (server.listen[0] = "127.0.0.1:${port}"), by pid ${first.proc.pid} (qm)`,
    );
    expect(err).not.toContain("listening on");
    expect(runFiles(second.stateDir).size).toBe(0);
    // Every connection still reaches the one scheduler: its uptime never goes back.
    let last = -1;
    for (let i = 0; i < 10; i++) {
      const s = (await status(first.url)) as unknown as { uptime_s: number };
      expect(s.uptime_s).toBeGreaterThanOrEqual(last);
      last = s.uptime_s;
    }
  });

  test("a port held by a program that set SO_REUSEPORT is refused, naming that program", async () => {
    // `development: false` makes Bun set SO_REUSEPORT: the case that let two qm share a port.
    const holder = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      development: false,
      fetch: () => new Response("not qm"),
    });
    holders.push(holder);
    const { code, err } = await serveFails(
      config(`listen = ["127.0.0.1:0", "127.0.0.1:${holder.port}"]`).path,
    );
    expect(code).toBe(1);
    expect(err).toContain(
      `port ${holder.port} is already in use (server.listen[1] = "127.0.0.1:${holder.port}"), by pid ${process.pid} (`,
    );
  });

  test("metrics_listen on a taken port is refused the same way", async () => {
    const holder = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    holders.push(holder);
    const cfg = config(`listen = ["127.0.0.1:0"]\nmetrics_listen = "127.0.0.1:${holder.port}"`);
    const { code, err } = await serveFails(cfg.path);
    expect(code).toBe(1);
    expect(err).toContain(
      `port ${holder.port} is already in use (server.metrics_listen = "127.0.0.1:${holder.port}"), by pid ${process.pid} (`,
    );
    expect(runFiles(cfg.stateDir).size).toBe(0);
  });
});
