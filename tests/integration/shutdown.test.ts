import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { chat, serve, status } from "../support/e2e.ts";
import { alive } from "../support/qm-process.ts";

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
    expect(qm.log()).toContain("SIGTERM");
  });

  test("requests arriving during shutdown are refused, not lost silently", async () => {
    const qm = await serve(`[models.one]\ncmd = "\${demo} --token-ms 50 --tokens 20"\n`);
    const res = await chat(qm.url, "one", { stream: true });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("data:")) text += decoder.decode((await reader.read()).value);
    qm.proc.kill("SIGTERM");
    // The listener stops accepting at once; a new connection is refused or answered 503.
    const late = await chat(qm.url, "one").then(
      (r) => r.status,
      () => "refused",
    );
    expect([503, "refused"]).toContain(late);
    await reader.cancel();
    expect(await qm.proc.exited).toBe(0);
  });
});
