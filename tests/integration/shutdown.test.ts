import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import { alive } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads, stops and TTLs take real time.
setDefaultTimeout(20_000);

describe("shutdown", () => {
  test("SIGTERM lets an in-flight stream finish, stops every model and exits 0", async () => {
    const qm = await serve(`
[groups.all]
members = ["one", "two"]
swap = false

[models.one]
cmd = "\${demo} --token-ms 40 --tokens 20"

[models.two]
cmd = "\${demo} --ignore-sigterm"
stop_timeout_s = 0.5
`);
    await (await chat(qm.url, "two")).json();
    const res = await chat(qm.url, "one", { stream: true });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("data:")) text += decoder.decode((await reader.read()).value);
    const pids = (await status(qm.url)).models.map((m) => m.pid!).filter(Boolean);
    expect(pids).toHaveLength(2);
    qm.proc.kill("SIGTERM");
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toContain("data: [DONE]");
    expect(await qm.proc.exited).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    await qm.waitLog("SIGTERM");
  });

  test("past shutdown_timeout_s running streams are cut with an error frame, models stop, exit 0", async () => {
    const qm = await serve(`
[server]
shutdown_timeout_s = 1

[groups.all]
members = ["long", "claude"]
swap = false

[models.long]
cmd = "\${demo} --token-ms 20 --tokens 100000"

[models.claude]
cmd = "\${demo} --token-ms 20 --tokens 100000"
`);
    const openai = await chat(qm.url, "long", { stream: true });
    const anthropic = await fetch(`${qm.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude",
        max_tokens: 100000,
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    const readAll = async (res: Response) => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return text;
        text += decoder.decode(value);
      }
    };
    const texts = [readAll(openai), readAll(anthropic)];
    await until(
      () => status(qm.url),
      (s) => s.models.every((m) => m.inflight === 1),
    );
    const pids = (await status(qm.url)).models.map((m) => m.pid!);
    const t0 = Date.now();
    qm.proc.kill("SIGTERM");
    const [o, a] = await Promise.all(texts);
    expect(await qm.proc.exited).toBe(0);
    // One second of grace, then the cut and the models' stop; nowhere near the stream's end.
    expect(Date.now() - t0).toBeLessThan(8000);
    expect(o).not.toContain("[DONE]");
    expect(o).toMatch(/data: \{"error":\{"message":"qm is shutting down[^"]*shutdown_timeout_s/);
    expect(a).toContain("event: error");
    expect(a).toContain("shutting down");
    for (const pid of pids) expect(alive(pid)).toBe(false);
    await qm.waitLog("cutting 2 request(s)");
  });

  test("requests arriving during shutdown are refused, not lost silently", async () => {
    const qm = await serve(`[models.one]\ncmd = "\${demo} --token-ms 50 --tokens 20"\n`);
    const res = await chat(qm.url, "one", { stream: true });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("data:")) text += decoder.decode((await reader.read()).value);
    qm.proc.kill("SIGTERM");
    // Signals arrive asynchronously: wait until qm says it is shutting down.
    const health = () =>
      fetch(`${qm.url}/health`).then(
        (r) => r.status,
        () => "refused",
      );
    await until(health, (code) => code !== 200);
    // New connections are refused; one that reuses a kept-alive connection is answered 503.
    const late = await chat(qm.url, "one").then(
      (r) => r.status,
      () => "refused",
    );
    expect([503, "refused"]).toContain(late);
    await reader.cancel();
    expect(await qm.proc.exited).toBe(0);
  });
});

describe("crash of qm itself", () => {
  test("SIGKILL of qm takes its models' process groups with it (the death watch)", async () => {
    // A model wrapped in a shell: the server is the leader's child, in its group.
    const qm = await serve(`[models.one]\ncmd = "sh -c '\${demo} & wait'"\n`);
    await (await chat(qm.url, "one")).json();
    const leader = (await status(qm.url)).models[0]!.pid!;
    const members = groupMembers(leader);
    expect(members).toContain(leader);
    expect(members.length).toBeGreaterThan(1);
    qm.proc.kill("SIGKILL");
    await qm.proc.exited;
    // The watcher reads the end of its input and kills the group.
    await until(
      async () => members.filter(aliveNotZombie),
      (left) => left.length === 0,
      3000,
    );
  });
});

/** The pids whose process group is `pgid`. */
function groupMembers(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === pgid;
      } catch {
        return false;
      }
    });
}

/** A killed child may linger as a zombie until init reaps it; that is not an orphan. */
function aliveNotZombie(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
