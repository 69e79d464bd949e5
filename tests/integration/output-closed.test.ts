/**
 * qm outlives its output: `qm serve | head -1` closing the pipe, `| tee` dying with Ctrl-C and
 * the terminal going away never stop it or cut a request. The log goes on in the state dir's
 * qm.log; a stop (Ctrl-C, SIGTERM, the terminal's hang-up) still finishes what is in flight,
 * exits 0 and removes the run file.
 */
import { afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, until } from "../support/e2e.ts";
import { freePort } from "../support/net.ts";
import { runFiles } from "../support/own-config.ts";
import { alive, QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(30_000);

const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
});

interface Setup {
  dir: string;
  config: string;
  stateDir: string;
  url: string;
}

/** A config on a port of its own (the log may not reach the test to say which). */
function setup(model = ""): Setup {
  const dir = mkdtempSync(join(tmpdir(), "qm-output-"));
  const stateDir = join(dir, "state");
  const port = freePort();
  const config = join(dir, "quartermaster.toml");
  writeFileSync(
    config,
    `[server]\nlisten = ["127.0.0.1:${port}"]\nstate_dir = "${stateDir}"\nshutdown_timeout_s = 10\n\n` +
      `[models.one]\ncmd = "\${QM_BIN} demo-upstream --port \${PORT} --name one ${model}"\n`,
  );
  return { dir, config, stateDir, url: `http://127.0.0.1:${port}` };
}

/** qm's pid, from the run file it writes once it runs, and its listener answering. */
async function running(s: Setup): Promise<number> {
  const files = await until(
    async () => runFiles(s.stateDir),
    (f) => f.size === 1,
    10_000,
  );
  const pid = [...files.keys()][0]!;
  pids.push(pid);
  await until(
    () =>
      fetch(`${s.url}/health`).then(
        (r) => r.status,
        () => 0,
      ),
    (code) => code === 200,
    10_000,
  );
  return pid;
}

/** The exit code the shell wrote once qm ended. */
async function exitCode(file: string): Promise<number> {
  const text = await until(
    async () => (existsSync(file) ? readFileSync(file, "utf8").trim() : ""),
    (t) => t !== "",
    15_000,
  );
  return Number(text);
}

const qmLog = (s: Setup) => readFileSync(join(s.stateDir, "qm.log"), "utf8");

describe("qm outlives its output", () => {
  test("qm serve 2>&1 | head -1: the pipe closes, qm serves on, its log goes on in qm.log", async () => {
    const s = setup();
    const rc = join(s.dir, "rc");
    const head = join(s.dir, "head");
    const shell = Bun.spawn(
      [
        "bash",
        "-c",
        '( "$0" serve -c "$1" 2>&1; echo $? > "$2" ) | head -1 > "$3"',
        QM,
        s.config,
        rc,
        head,
      ],
      { cwd: ROOT, stdio: ["ignore", "ignore", "ignore"] },
    );
    const pid = await running(s);
    // head printed one line and left: the pipe qm writes its log to has no reader now.
    await until(
      async () => (existsSync(head) ? readFileSync(head, "utf8") : ""),
      (t) => t.includes("serving 1 model(s)"),
    );
    for (let i = 0; i < 3; i++) {
      const res = await chat(s.url, "one");
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: unknown[] };
      expect(body.choices.length).toBe(1);
    }
    process.kill(pid, "SIGTERM");
    expect(await exitCode(rc)).toBe(0);
    await shell.exited;
    expect(runFiles(s.stateDir).size).toBe(0);
    const log = qmLog(s);
    expect(log).toContain("stderr stopped taking lines (EPIPE): the log goes on here");
    expect(log).toContain("INFO  stopped");
    expect(readFileSync(head, "utf8").split("\n").filter(Boolean)).toHaveLength(1);
  });

  test("qm serve | tee, then Ctrl-C: the in-flight stream ends properly, exit 0, no run file", async () => {
    const s = setup("--token-ms 100 --tokens 15");
    const rc = join(s.dir, "rc");
    const teeFile = join(s.dir, "tee.log");
    // Its own session and process group, as a terminal's job is: Ctrl-C signals all of it.
    const shell = Bun.spawn(
      [
        "bash",
        "-c",
        '( "$0" serve -c "$1" 2>&1; echo $? > "$2" ) | tee "$3" > /dev/null',
        QM,
        s.config,
        rc,
        teeFile,
      ],
      { cwd: ROOT, stdio: ["ignore", "ignore", "ignore"], detached: true },
    );
    pids.push(shell.pid);
    const pid = await running(s);
    const res = await chat(s.url, "one", { stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("data: {")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    process.kill(-shell.pid, "SIGINT"); // Ctrl-C: qm, tee and the shells at once
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(text).not.toContain('"error"');
    expect(await exitCode(rc)).toBe(0);
    expect(alive(pid)).toBe(false);
    expect(runFiles(s.stateDir).size).toBe(0);
    expect(qmLog(s)).toContain("INFO  stopped");
  });
});

/** Python's pty module gives qm a terminal of its own to lose. */
const python = Bun.which("python3");

/**
 * Runs `qm serve` as a session leader with a pty as its controlling terminal, then `steps`
 * (Python, with `pid`, `fd` and `read_until(b"…")`), then prints qm's exit code.
 */
async function underPty(
  config: string,
  steps: string,
): Promise<{ out: string; err: string; code: number }> {
  const script = `
import os, pty, select, signal, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "serve", "-c", sys.argv[2]])
seen = b""
def read_until(word):
    global seen
    while word not in seen:
        ready, _, _ = select.select([fd], [], [], 15)
        if not ready:
            sys.exit(3)
        seen += os.read(fd, 4096)
read_until(b"listening on")
${steps.trim()}
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
`;
  const proc = Bun.spawn([python!, "-c", script, QM, config], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  pids.push(proc.pid);
  const [out, err, code] = await Promise.all([proc.stdout.text(), proc.stderr.text(), proc.exited]);
  return { out, err, code };
}

describe.skipIf(python === null)("the terminal goes away", () => {
  test("SIGHUP with the terminal gone stops qm cleanly: exit 0, no run file", async () => {
    const s = setup();
    // Closing the master end hangs the terminal up; the kernel sends the leader SIGHUP.
    const { out, err, code } = await underPty(s.config, "os.close(fd)");
    expect({ code, err }).toEqual({ code: 0, err: "" });
    expect(out.trim()).toBe("0");
    expect(runFiles(s.stateDir).size).toBe(0);
    const log = qmLog(s);
    expect(log).toContain("SIGHUP (the terminal closed): finishing in-flight requests");
    expect(log).toContain("INFO  stopped");
  });

  test("a SIGHUP while the terminal is still there reloads the config", async () => {
    const s = setup();
    const { out, code } = await underPty(
      s.config,
      `
os.kill(pid, signal.SIGHUP)
read_until(b"reloading the config")
os.kill(pid, signal.SIGTERM)
read_until(b"INFO  stopped")
`,
    );
    expect(code).toBe(0);
    expect(out.trim()).toBe("0");
    expect(runFiles(s.stateDir).size).toBe(0);
  });
});
