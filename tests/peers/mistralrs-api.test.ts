/** The node API's reading of mistral.rs answers (src/peers/mistralrs.ts): pure, or on a fake fetch. */
import { describe, expect, test } from "bun:test";
import { MistralrsApi, mergeListed } from "../../src/peers/mistralrs.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const entry = (id: unknown, status?: unknown) => ({ id, object: "model", status });

describe("a node's list", () => {
  test("an id listed twice counts once, the same in every order: loaded, then reloading, then unloaded", () => {
    const entries = [entry("x", "reloading"), entry("x", "loaded"), entry("y", "unloaded")];
    const orders = [entries, [...entries].reverse(), [entries[1], entries[2], entries[0]]];
    for (const order of orders) {
      expect(Object.fromEntries(mergeListed(order))).toEqual({ x: "loaded", y: "unloaded" });
    }
    expect(
      Object.fromEntries(mergeListed([entry("z", "unloaded"), entry("z", "reloading")])),
    ).toEqual({ z: "reloading" });
  });

  test("entries without a usable id or status are passed over (`default` has none)", () => {
    const listed = mergeListed([
      entry("default"),
      entry("", "loaded"),
      entry(7, "loaded"),
      entry("q", "sleeping"),
      entry("r", "not_found"),
      null,
      "x",
    ]);
    expect(listed.size).toBe(0);
  });
});

describe("a lifecycle answer", () => {
  test("carries the node's error text, on one line and bounded", async () => {
    const long = `Failed to load model:\n${"x".repeat(600)}`;
    const api = new MistralrsApi(
      { id: "n", url: "http://n.test", apiKey: "", timeoutMs: 1000 },
      new FakeTimers(),
      async () => Response.json({ model_id: "a", status: "internal_error", error: long }),
    );
    const answer = await api.reload("a", 1000);
    expect(answer.status).toBe("internal_error");
    expect(answer.error).toStartWith("Failed to load model: xxx");
    expect(answer.error).toHaveLength(501);
    const plain = new MistralrsApi(
      { id: "n", url: "http://n.test", apiKey: "", timeoutMs: 1000 },
      new FakeTimers(),
      async () => Response.json({ model_id: "a", status: "unloaded" }),
    );
    expect(await plain.unload("a")).toEqual({ status: "unloaded", error: null });
  });
});
