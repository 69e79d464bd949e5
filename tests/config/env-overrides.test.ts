import { describe, expect, test } from "bun:test";
import { errors, issues, load } from "./support.ts";

const base = `[server]
listen = ["127.0.0.1:8080"]
start_port = 10001
[scheduler]
hold_ms = 10000
[models.m]
cmd = "server --port \${PORT}"
`;

describe("QM_<SECTION>__<KEY> overrides", () => {
  test("override scalars of server, scheduler, resources and router, beating the file", () => {
    const config = load(base, {
      env: {
        QM_SERVER__START_PORT: "20000",
        QM_SCHEDULER__HOLD_MS: "0",
        QM_SCHEDULER__HOLD_ON: "request",
        QM_RESOURCES__VRAM_BUDGET_GB: "23.5",
        QM_RESOURCES__GPU_PROBE: "off",
        QM_ROUTER__POLICY: "matrix",
        QM_SERVER__LOG_LEVEL: "debug",
      },
    });
    expect(config.server.startPort).toBe(20000);
    expect(config.models.m?.port).toBe(20000);
    expect(config.scheduler).toEqual({
      holdMs: 0,
      patienceMs: 300000,
      holdOn: "request",
      holdPolicy: "cost",
      maxQueue: 512,
      fairShare: { enabled: true, weights: { interactive: 4, normal: 2, batch: 1 } },
    });
    expect(config.resources.vramBudgetGb).toBe(23.5);
    expect(config.resources.gpuProbe).toBe("off");
    expect(config.router.policy).toBe("matrix");
    expect(config.server.logLevel).toBe("debug");
  });

  test("string arrays take a comma-separated list", () => {
    const config = load(base, {
      env: { QM_SERVER__LISTEN: "127.0.0.1:9000, 127.0.0.1:9001", QM_SERVER__API_KEYS: "" },
    });
    expect(config.server.listen).toEqual(["127.0.0.1:9000", "127.0.0.1:9001"]);
    expect(config.server.apiKeys).toEqual([]);
  });

  test("a bad value is an issue of file `env` naming the variable", () => {
    expect(issues(base, { env: { QM_SERVER__START_PORT: "lots" } })).toEqual([
      {
        file: "env",
        line: 0,
        col: 0,
        key: "QM_SERVER__START_PORT",
        message: 'expected a number, got "lots" (for server.start_port)',
      },
    ]);
    // Values that coerce but fail the schema or a later check are still blamed on env.
    expect(
      errors(base, {
        env: {
          QM_SERVER__START_PORT: "1.5",
          QM_SCHEDULER__HOLD_ON: "always",
          QM_SERVER__LISTEN: "nonsense",
        },
      }),
    ).toEqual([
      'env: QM_SCHEDULER__HOLD_ON: expected one of "tool_calls", "request", got "always"',
      'env: QM_SERVER__LISTEN: expected "host:port" (IPv6 as "[::1]:8080"), got "nonsense"',
      "env: QM_SERVER__START_PORT: expected an integer, got 1.5",
    ]);
  });

  test("unknown keys of those sections are errors; other QM_ variables are not ours", () => {
    expect(
      errors(base, {
        env: {
          QM_SERVER__START_PROT: "1",
          QM_ROUTER__BOGUS: "x",
          QM_MODELS__M__CMD: "y",
          QM_CONFIG: "/etc/qm.toml",
        },
      }),
    ).toEqual([
      "env: QM_ROUTER__BOGUS: unknown setting router.bogus",
      "env: QM_SERVER__START_PROT: unknown setting server.start_prot (did you mean QM_SERVER__START_PORT?)",
    ]);
  });

  test("an override creates a section the file does not have", () => {
    expect(load("", { env: { QM_SCHEDULER__PATIENCE_MS: "5" } }).scheduler.patienceMs).toBe(5);
  });
});
