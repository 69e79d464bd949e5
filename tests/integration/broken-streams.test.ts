/**
 * OpenAI streams that break upstream, through the compiled binary: each must end with an error
 * event in OpenAI's shape, never look like a complete answer. Sound streams stay byte-exact.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[groups.all]
members = ["nodone", "midevent", "notjson", "sound"]
swap = false
exclusive = false

[models.nodone]
cmd = "\${demo} --token-ms 0 --tokens 3 --bad-sse no-done"

[models.midevent]
cmd = "\${demo} --token-ms 0 --tokens 3 --bad-sse mid-event"

[models.notjson]
cmd = "\${demo} --token-ms 0 --tokens 3 --bad-sse not-json"

[models.sound]
cmd = "\${demo} --token-ms 0 --tokens 3"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const dataLines = (text: string) => text.split("\n").filter((l) => l.startsWith("data: "));
const lastError = (text: string) =>
  (JSON.parse(dataLines(text).at(-1)!.slice(6)) as { error: Record<string, unknown> }).error;

describe("a broken upstream stream ends with an error event", () => {
  test.each([
    ["nodone", 'model "nodone" stream ended unexpectedly (no data: [DONE])'],
    ["midevent", 'model "midevent" stream ended unexpectedly (mid-event)'],
    ["notjson", 'model "notjson" sent an event that is not JSON'],
  ])("%s", async (model, message) => {
    const res = await chat(qm.url, model, { stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(lastError(text)).toEqual({
      message,
      type: "upstream_error",
      param: null,
      code: "upstream_failed",
    });
    // Nothing after the error, and no [DONE] that would make it look finished.
    expect(text.endsWith("\n\n")).toBe(true);
    expect(dataLines(text)).not.toContain("data: [DONE]");
    // And the operator hears of it.
    await qm.waitLog(message);
  });

  test("legacy completions need their [DONE] too", async () => {
    const res = await fetch(`${qm.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "nodone", prompt: "x", stream: true }),
    });
    expect(lastError(await res.text()).message).toContain("no data: [DONE]");
  });

  test("a sound stream is untouched: ends with [DONE], no error event", async () => {
    const text = await (await chat(qm.url, "sound", { stream: true })).text();
    expect(dataLines(text).at(-1)).toBe("data: [DONE]");
    expect(text).not.toContain('"error"');
  });

  test("non-streamed answers of the same models are unaffected", async () => {
    const res = await chat(qm.url, "nodone");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe("chat.completion");
  });
});
