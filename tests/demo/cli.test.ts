/** `bun src/demo/cli.ts` as a process: the listening line, exit codes, signals. */
import { afterEach, expect, test } from "bun:test";
import { demoArgv } from "../support/demo-model.ts";

const procs: Bun.Subprocess[] = [];

afterEach(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});

function run(...flags: string[]) {
  const p = Bun.spawn(demoArgv(...flags), { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  procs.push(p);
  return p;
}

/** Reads stdout until the "listening on" line and returns its URL. */
async function listeningUrl(p: Bun.Subprocess<"ignore", "pipe", "pipe">): Promise<string> {
  const reader = p.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`no listening line; stdout: ${text}`);
    text += decoder.decode(value, { stream: true });
    const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(text);
    if (m) {
      reader.releaseLock();
      return m[1]!;
    }
  }
}

test("--help prints usage and exits 0", async () => {
  const p = run("--help");
  expect(await p.exited).toBe(0);
  expect(await new Response(p.stdout).text()).toContain("Usage: qm demo-upstream");
});

test("a bad flag is a usage error: exit 2", async () => {
  const p = run("--nope");
  expect(await p.exited).toBe(2);
  expect(await new Response(p.stderr).text()).toContain("unknown option --nope");
});

test("--crash-at-start writes to stderr and exits 1 before listening", async () => {
  const p = run("--crash-at-start", "--name", "bad");
  expect(await p.exited).toBe(1);
  expect(await new Response(p.stdout).text()).not.toContain("listening on");
  expect(await new Response(p.stderr).text()).toContain(
    "demo-upstream bad: error: failed to load model",
  );
});

test("port 0: prints the listening URL; SIGTERM exits 0", async () => {
  const p = run("--port", "0");
  const url = await listeningUrl(p);
  expect((await fetch(`${url}/health`)).status).toBe(200);
  p.kill("SIGTERM");
  expect(await p.exited).toBe(0);
});

test("--exit-after-ms exits 1 by itself", async () => {
  const p = run("--exit-after-ms", "100");
  await listeningUrl(p);
  expect(await p.exited).toBe(1);
  expect(await new Response(p.stderr).text()).toContain("exiting after 100 ms");
});

test("--crash-after-tokens kills the process mid-stream", async () => {
  const p = run("--crash-after-tokens", "2", "--token-ms", "0");
  const url = await listeningUrl(p);
  const body = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ messages: [], stream: true }),
  })
    .then((r) => r.text())
    .catch(() => "");
  expect(body).not.toContain("[DONE]");
  expect(await p.exited).toBe(1);
  expect(await new Response(p.stderr).text()).toContain("simulated crash after 2 tokens");
});

test("--ignore-sigterm survives SIGTERM; SIGKILL ends it", async () => {
  const p = run("--ignore-sigterm");
  const url = await listeningUrl(p);
  p.kill("SIGTERM");
  // It is still serving after the SIGTERM was handled.
  const stderr = p.stderr.getReader();
  const { value } = await stderr.read();
  expect(new TextDecoder().decode(value)).toContain("ignoring SIGTERM");
  expect((await fetch(`${url}/health`)).status).toBe(200);
  p.kill("SIGKILL");
  await p.exited;
  expect(p.signalCode).toBe("SIGKILL");
});
