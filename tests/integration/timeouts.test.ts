/**
 * Upstreams that hang, through the compiled binary: before their headers, mid-stream and in
 * the middle of a JSON body, on every proxied path. Each must end in a timeout the client's API
 * understands, release its lease (the swap group moves on) and, when it keeps happening, get
 * the model restarted. Limits are a fraction of a second so the tests stay quick.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
# One model at a time: a request stuck on "hang" would keep "steady" from ever starting.
[groups.pair]
members = ["hang", "steady"]

[groups.rest]
members = ["stall", "wedged"]
swap = false
exclusive = false

[models.hang]
cmd = "\${demo} --hang-before-headers"
first_byte_timeout_s = 0.4

[models.steady]
cmd = "\${demo} --token-ms 0 --tokens 4"

[models.stall]
cmd = "\${demo} --token-ms 0 --stall-after-tokens 2"
stall_timeout_s = 0.4

[models.wedged]
cmd = "\${demo} --token-ms 0 --stall-after-tokens 1"
stall_timeout_s = 0.3
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

type Err = { message: string; code: string; type: string };
const errorOf = (body: unknown) => (body as { error: Err }).error;
const lastData = (text: string) =>
  JSON.parse(
    text
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .at(-1)!
      .slice(6),
  );

function messages(model: string, stream: boolean) {
  return fetch(`${qm.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model,
      max_tokens: 16,
      stream,
      messages: [{ role: "user", content: "hi" }],
    }),
  });
}

describe("no headers within first_byte_timeout_s", () => {
  test("OpenAI: 504 upstream_timeout; the lease is released, so the swap group moves on", async () => {
    const res = await chat(qm.url, "hang");
    expect(res.status).toBe(504);
    expect(res.headers.get("x-qm-model")).toBe("hang");
    const err = errorOf(await res.json());
    expect(err.code).toBe("upstream_timeout");
    expect(err.message).toBe('model "hang" sent no response within 0.4 s (first_byte_timeout_s)');
    // "steady" can only start once "hang" is stopped, which needs its lease back.
    const next = await chat(qm.url, "steady");
    expect(next.status).toBe(200);
    await next.json();
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "hang")?.inflight).toBe(0);
  });

  test("a cold streaming request gets its wait status, then an error event", async () => {
    const res = await chat(qm.url, "hang", { stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith(": qm-status:")).toBe(true);
    expect(errorOf(lastData(text)).code).toBe("upstream_timeout");
  });

  test("/upstream/{model}/… and /v1/messages (Anthropic envelope) time out the same way", async () => {
    const raw = await fetch(`${qm.url}/upstream/hang/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [] }),
    });
    expect(raw.status).toBe(504);
    expect(errorOf(await raw.json()).code).toBe("upstream_timeout");
    const res = await messages("hang", false);
    expect(res.status).toBe(504);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("timeout_error");
    expect(body.error.message).toContain("first_byte_timeout_s");
  });
});

describe("silence mid-answer beyond stall_timeout_s", () => {
  test("an OpenAI stream ends with an error event after the tokens that came", async () => {
    const res = await chat(qm.url, "stall", { stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"content":" I"');
    expect(text).not.toContain("[DONE]");
    const err = errorOf(lastData(text));
    expect(err.code).toBe("upstream_timeout");
    expect(err.message).toBe('model "stall" sent nothing for 0.4 s mid-answer (stall_timeout_s)');
  });

  test("a JSON answer that stops halfway is a 504, not a 200 with half a body", async () => {
    const res = await chat(qm.url, "stall");
    expect(res.status).toBe(504);
    expect(errorOf(await res.json()).code).toBe("upstream_timeout");
  });

  test("an Anthropic stream ends with an error event of type timeout_error", async () => {
    const res = await messages("stall", true);
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text.split("\n").filter((l) => l.startsWith("event: "));
    expect(events.at(-1)).toBe("event: error");
    expect(lastData(text).error.type).toBe("timeout_error");
    expect(events).not.toContain("event: message_stop");
  });
});

describe("a model that keeps stalling", () => {
  test("is restarted after three timeouts in a row; the next request starts it afresh", async () => {
    const pids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await chat(qm.url, "wedged", { stream: true });
      expect(errorOf(lastData(await res.text())).code).toBe("upstream_timeout");
      if (i === 0) pids.push((await status(qm.url)).models.find((m) => m.id === "wedged")!.pid!);
    }
    await until(
      () => status(qm.url),
      (s) => s.models.find((m) => m.id === "wedged")?.state === "stopped",
    );
    await qm.waitLog(/model "wedged" timed out 3 times without an answer: restarting it/);
    const again = await chat(qm.url, "wedged", { stream: true });
    expect(again.headers.get("x-qm-model-loaded")).toBe("false");
    await again.text();
    const pid = (await status(qm.url)).models.find((m) => m.id === "wedged")!.pid!;
    expect(pid).not.toBe(pids[0]);
  });
});
