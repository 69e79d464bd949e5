/** What a key that is no admin sees of status and of each kind of event. */
import { describe, expect, test } from "bun:test";
import { eventFor, statusFor } from "../../../src/api/edge/visible.ts";
import type { ModelLookup } from "../../../src/api/gateway.ts";
import type { StatusJson } from "../../../src/api/status-json.ts";
import { modelIdFor } from "../../../src/config/aliases.ts";
import { KeyTable } from "../../../src/keys/table.ts";
import { config } from "../../support/config.ts";

const cfg = config(
  `[keys.alice]\nkey = "a"\nmodels = ["pub"]\n[models.pub]\ncmd = "x"\n[models.hid]\ncmd = "x"\n`,
);
const gw: ModelLookup = {
  config: cfg,
  resolve: (n) => {
    const id = modelIdFor(cfg, n);
    return id === undefined ? undefined : cfg.models[id];
  },
};
const alice = KeyTable.of(cfg).lookup("a")!;
const admin = KeyTable.of(cfg).anonymous;

const model = (id: string, queued: number) =>
  ({ id, state: "ready", queued }) as StatusJson["models"][number];

const STATUS = {
  version: "1",
  uptime_s: 1,
  models: [model("pub", 1), model("hid", 4)],
  queue: { depth: 5 },
  waiting: [
    { key: "alice", model: "pub", waited_ms: 5, position: 1 },
    { key: "bob", model: "hid", waited_ms: 9, position: 1 },
  ],
  swaps: [
    { target: "pub", evict: ["hid"], waiters: 1 },
    { target: "hid", evict: ["pub"], waiters: 4 },
  ],
  peers: [],
  preload: {
    pending: ["hid"],
    loading: "hid",
    done: ["pub"],
    skipped: [{ model: "hid", reason: "x" }],
  },
  resources: {
    vram_budget_gb: 24,
    vram_ceiling_gb: 24,
    vram_used_gb: 8,
    ram_budget_gb: 0,
    ram_used_gb: 0,
    probe: "off",
    gpu: null,
    gpus: [
      {
        index: 0,
        budget_gb: 24,
        ceiling_gb: 24,
        used_gb: 8,
        models: ["pub", "hid"],
        reading: null,
      },
    ],
  },
} as StatusJson;

describe("status", () => {
  test("its models, their waits and swaps, its own waiting requests; no peers", () => {
    const s = statusFor(gw, alice, STATUS);
    expect(s.models.map((m) => m.id)).toEqual(["pub"]);
    expect(s.queue).toEqual({ depth: 1 });
    expect(s.waiting).toEqual([{ key: "alice", model: "pub", waited_ms: 5, position: 1 }]);
    expect(s.swaps).toEqual([{ target: "pub", evict: [], waiters: 1 }]);
    expect(s.peers).toBeUndefined();
    expect(s.preload).toEqual({ pending: [], loading: null, done: ["pub"], skipped: [] });
    expect(s.resources.gpus?.[0]?.models).toEqual(["pub"]);
    expect(JSON.stringify(s)).not.toContain("hid");
  });

  test("an admin sees it whole", () => {
    expect(statusFor(gw, admin, STATUS)).toBe(STATUS);
  });
});

describe("events", () => {
  test("its requests, its models' state, load and hold; memory without other names; nothing else", () => {
    const see = (e: Record<string, unknown>) => eventFor(gw, alice, { type: String(e.type), ...e });
    expect(see({ type: "request", key: "alice", model: "pub" })).not.toBeNull();
    expect(see({ type: "request", key: "bob", model: "pub" })).toBeNull();
    for (const type of ["model", "load", "hold"]) {
      expect(see({ type, model: "pub" })).not.toBeNull();
      expect(see({ type, model: "hid" })).toBeNull();
      expect(see({ type, model: 7 })).toBeNull();
    }
    expect(see({ type: "vram", gpus: [{ models: ["pub", "hid"] }] })).toEqual({
      type: "vram",
      gpus: [{ models: ["pub"] }],
    });
    for (const type of ["config", "peer", "status", "something-new"]) {
      expect({ type, seen: see({ type }) }).toEqual({ type, seen: null });
    }
    expect(eventFor(gw, admin, { type: "config" })).toEqual({ type: "config" });
  });
});
