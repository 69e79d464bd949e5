// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${env.…} is qm's macro, literal text here
/**
 * `qm doctor`: each check on a box of the test's making (fake ports, GPU probe, PATH) with real
 * config files and real GGUF headers; then the binary on the shipped config.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DoctorCheck, DoctorDeps } from "../../src/cli/doctor/check.ts";
import { doctorCommand } from "../../src/cli/doctor/command.ts";
import { readModelFile } from "../../src/gpu/gguf/scan.ts";
import type { GpuReading, ProbeResult } from "../../src/gpu/types.ts";
import type { PlatformReport } from "../../src/platform/types.ts";
import { llama } from "../gpu/gguf/fake-models.ts";
import { writeModelFile } from "../gpu/gguf/gguf-writer.ts";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { QM, ROOT } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

let dir: string;
let gguf: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "qm-doctor-"));
  gguf = join(dir, "small.gguf");
  // About 0.6 GB at ctx 4096, as qm scan sizes it.
  await writeModelFile(
    gguf,
    llama({
      layers: 2,
      embd: 256,
      heads: 4,
      kvHeads: 2,
      ffn: 512,
      vocab: 1024,
      ctxLen: 4096,
      fileType: 2,
    }),
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const noGpu: ProbeResult = { ok: false, reason: "nvidia-smi not found: static budget applies" };

function reading(apps: { pid: number }[] = []): ProbeResult {
  const r: GpuReading = {
    gpus: [
      {
        index: 0,
        uuid: "GPU-1",
        name: "NVIDIA H100",
        totalMib: 81920,
        usedMib: 1024,
        freeMib: 80896,
      },
    ],
    apps: apps.map((a) => ({ pid: a.pid, gpuUuid: "GPU-1", usedMib: 512 })),
    totalGb: 80,
    usedGb: 1,
    freeGb: 79,
    oursGb: 0,
    foreignGb: 1,
    ourPidsOnGpu: [],
  };
  return { ok: true, reading: r };
}

const LINUX: PlatformReport = {
  name: "linux-x64",
  subreaper: true,
  deathWatch: true,
  processTable: true,
  portHolders: true,
};
const PLATFORM_OK =
  "✓ platform: linux-x64; has a process table (start times), a child subreaper, a death watch (models die with qm), port holders";

function box(over: Partial<DoctorDeps> = {}): DoctorDeps {
  return {
    which: (p) => (p === "llama-server" ? "/usr/bin/llama-server" : null),
    bind: () => ({ kind: "free" }),
    writable: () => null,
    probeGpu: async () => noGpu,
    readModel: readModelFile,
    pidVisible: () => true,
    platform: () => ({ report: LINUX, unified: null }),
    inContainer: () => false,
    database: () => ({ ok: true, bytes: 3 * 1024 * 1024, responses: 2, requests: 40 }),
    env: { PATH: "/usr/bin" },
    ...over,
  };
}

let n = 0;
async function doctor(toml: string, deps: DoctorDeps, ...args: string[]) {
  const path = join(dir, `c${n++}.toml`);
  await writeFile(path, toml);
  let out = "";
  const code = await doctorCommand(["-c", path, ...args], {
    out: (t) => {
      out += t;
    },
    deps,
  });
  return { code, out: out.replaceAll(path, "CONFIG").replaceAll(dir, "DIR") };
}

const model = (id: string, cmd: string) => `[models.${id}]\ncmd = "${cmd}"\n`;

describe("qm doctor", () => {
  test("a sound box and config: one ✓ line per check, no GPU as a note, exit 0", async () => {
    const toml = `[server]\nlisten = ["127.0.0.1:8080"]\nstate_dir = "${dir}/state"\n${model("small", `llama-server --port \${PORT} -m ${gguf} --ctx-size 4096`)}`;
    const r = await doctor(`${toml}[resources]\nvram_budget_gb = 8\n`, box());
    expect(r).toEqual({
      code: 0,
      out: [
        PLATFORM_OK,
        "✓ config: CONFIG is valid (1 model)",
        "✓ program small: llama-server → /usr/bin/llama-server",
        "✓ gguf small: DIR/small.gguf: needs about 0.6 GB at ctx 4096, within resources.vram_budget_gb (8.0 GB)",
        "✓ port 127.0.0.1:8080: free",
        "✓ state dir: DIR/state is writable",
        "✓ database: DIR/state/qm.db: 2 stored response(s), 40 request record(s), 3.0 MB of 256 MB",
        "• gpu: nvidia-smi not found: static budget applies",
        "✓ api key: listening on loopback only: no key needed",
        "all 9 checks passed",
        "",
      ].join("\n"),
    });
  });

  test("every failure gets ✗ and its fix; exit 1; --json carries fix on failed checks only", async () => {
    const toml = [
      `[server]\nlisten = ["0.0.0.0:8080", "127.0.0.1:0"]\nstate_dir = "${dir}/ro"`,
      "[resources]\nvram_budget_gb = 0.5",
      model("big", `llama-server --port \${PORT} -m ${gguf}`),
      model("gone", `llama-server --port \${PORT} -m ${dir}/missing.gguf`),
      model("nope", "no-such-server --port ${PORT}"),
    ].join("\n");
    const deps = box({
      bind: (_host, port) =>
        port === 8080 ? { kind: "in use", holder: "pid 7 (qm)" } : { kind: "free" },
      writable: () => "EACCES",
    });
    const r = await doctor(toml, deps);
    expect(r.code).toBe(1);
    const lines = r.out.trimEnd().split("\n");
    expect(lines.filter((l) => l.startsWith("✗"))).toEqual([
      "✗ program nope: no-such-server was not found on PATH — fix: install it, or give its full path in models.nope.cmd",
      "✗ gguf big: DIR/small.gguf: needs about 0.6 GB at ctx 4096, more than resources.vram_budget_gb (0.5 GB) — fix: a smaller quantisation or --ctx-size, fewer -ngl layers, or a larger budget",
      expect.stringMatching(
        /^✗ gguf gone: DIR\/missing\.gguf: .+ — fix: check the path after -m in models\.gone\.cmd$/,
      ),
      "✗ port 0.0.0.0:8080: in use by pid 7 (qm) — fix: stop it (if it is another qm: 'qm status --url http://0.0.0.0:8080'), or change server.listen[0]",
      "✗ state dir: DIR/ro is not writable: EACCES — fix: set server.state_dir to a folder qm may write, or fix the folder's permissions",
      '✗ api key: listening beyond loopback (0.0.0.0:8080) with no API key: anyone who can reach it can run your models — fix: set server.api_keys, e.g. api_keys = ["${env.QM_API_KEY}"], or listen on 127.0.0.1',
    ]);
    expect(lines).toContain(
      "✓ port 127.0.0.1:0: port 0: the system picks a free port at each start",
    );
    expect(lines.at(-1)).toBe("6 of 13 checks failed");

    const json = JSON.parse((await doctor(toml, deps, "--json")).out) as {
      ok: boolean;
      checks: { name: string; ok: boolean; detail: string; fix?: string }[];
    };
    expect(json.ok).toBe(false);
    expect(json.checks).toHaveLength(13);
    for (const c of json.checks) {
      expect(Object.keys(c).sort()).toEqual(
        c.ok
          ? c.name === "gpu"
            ? ["detail", "name", "note", "ok"]
            : ["detail", "name", "ok"]
          : ["detail", "fix", "name", "ok"],
      );
    }
    expect(json.checks.find((c) => c.name === "port 0.0.0.0:8080")).toEqual({
      name: "port 0.0.0.0:8080",
      ok: false,
      detail: "in use by pid 7 (qm)",
      fix: "stop it (if it is another qm: 'qm status --url http://0.0.0.0:8080'), or change server.listen[0]",
    });
  });

  test("a config that does not load fails the config check; the box is still looked at", async () => {
    const r = await doctor(
      `[server]\nlisten = ["127.0.0.1:8080"]\nstate_dir = "${dir}/s"\n[models.a]\ncmd = llama-server\n`,
      box(),
    );
    expect(r.code).toBe(1);
    expect(r.out.split("\n")).toEqual([
      PLATFORM_OK,
      "✗ config: CONFIG:5:7: models.a.cmd: invalid value (hint: strings need quotes: cmd = \"llama-server\") — fix: fix the lines named; 'qm config check -c CONFIG' lists them all",
      expect.stringMatching(/^✓ state dir: .+ is writable$/),
      "• gpu: nvidia-smi not found: static budget applies",
      "1 of 4 checks failed",
      "",
    ]);
  });

  test("the GPU probe: a reading, one qm could not trust, a broken driver; the budget from the cards", async () => {
    const toml = `[server]\nstate_dir = "${dir}/s"\n${model("small", `llama-server --port \${PORT} -m ${gguf}`)}`;
    const line = async (deps: DoctorDeps, name: string) =>
      (await doctor(toml, deps)).out.split("\n").find((l) => l.includes(` ${name}`))!;
    expect(await line(box({ probeGpu: async () => reading() }), "gpu:")).toBe(
      "✓ gpu: 1 GPU (NVIDIA H100): 80.0 GB, 79.0 GB free",
    );
    expect(await line(box({ probeGpu: async () => reading() }), "gguf")).toEndWith(
      "within the GPUs' memory (80.0 GB)",
    );
    const hidden = box({ probeGpu: async () => reading([{ pid: 4242 }]), pidVisible: () => false });
    expect(await line(hidden, "gpu:")).toStartWith(
      "• gpu: 1 GPU (NVIDIA H100): 80.0 GB, 79.0 GB free; not trusted once models run: nvidia-smi lists pids this box's /proc does not show (4242), as in a container with its own PID namespace",
    );
    expect((await doctor(toml, hidden)).code).toBe(0);
    const container = box({ probeGpu: async () => reading(), inContainer: () => true });
    expect(await line(container, "gpu:")).toContain(
      "inside a container: unless it shares the host's PID namespace (--pid=host)",
    );
    const broken = box({
      probeGpu: async () => ({
        ok: false,
        reason:
          "NVIDIA driver and library versions differ (driver updated without a reboot?): static budget applies",
      }),
    });
    const r = await doctor(toml, broken);
    expect(r.code).toBe(1);
    expect(r.out).toContain(
      "✗ gpu: NVIDIA driver and library versions differ (driver updated without a reboot?): static budget applies — fix: run 'nvidia-smi' by hand",
    );
  });

  test("the GPU's kind leads the line: NVIDIA, unified memory, AMD, Apple silicon, none; auto by default", async () => {
    const toml = `[server]\nstate_dir = "${dir}/s"\n`;
    const asked: string[] = [];
    const gpuLine = async (result: ProbeResult) =>
      (
        await doctor(
          toml,
          box({
            probeGpu: async (command) => {
              asked.push(command);
              return result;
            },
          }),
        )
      ).out
        .split("\n")
        .find((l) => l.includes(" gpu:"))!;
    const nvidia = reading();
    if (!nvidia.ok) throw new Error("fixture");
    expect(await gpuLine({ ok: true, reading: { ...nvidia.reading, kind: "nvidia" } })).toBe(
      "✓ gpu: NVIDIA (nvidia-smi): 1 GPU (NVIDIA H100): 80.0 GB, 79.0 GB free",
    );
    expect(
      await gpuLine({ ok: true, reading: { ...nvidia.reading, kind: "nvidia-unified" } }),
    ).toStartWith(
      "✓ gpu: NVIDIA with unified memory (nvidia-smi; memory from /proc/meminfo): 1 GPU",
    );
    expect(await gpuLine({ ok: true, reading: { ...nvidia.reading, kind: "amd" } })).toStartWith(
      "✓ gpu: AMD (sysfs): 1 GPU",
    );
    expect(
      await gpuLine({
        ok: false,
        kind: "apple",
        reason: "Apple silicon: no live reading: static budget applies",
      }),
    ).toBe(
      "• gpu: Apple silicon (no live reading yet: static budget): Apple silicon: no live reading: static budget applies",
    );
    expect(
      await gpuLine({
        ok: false,
        kind: "none",
        reason:
          "no GPU found (nvidia-smi not found, no AMD card in /sys/class/drm): static budget applies",
      }),
    ).toStartWith("• gpu: none found (static budget): no GPU found");
    expect(asked).toEqual(["auto", "auto", "auto", "auto", "auto"]);
  });

  test("the platform: all of Linux's supervision passes; macOS is a note saying what is weaker, with its unified memory", async () => {
    const toml = `[server]\nstate_dir = "${dir}/s"\n`;
    const line = async (deps: DoctorDeps) =>
      (await doctor(toml, deps)).out.split("\n").find((l) => l.includes(" platform:"))!;
    expect(await line(box())).toBe(PLATFORM_OK);
    const mac = box({
      platform: () => ({
        report: {
          name: "darwin-arm64",
          subreaper: false,
          deathWatch: false,
          processTable: true,
          portHolders: true,
        },
        unified: { bytes: 48 * 1024 ** 3, ramBytes: 64 * 1024 ** 3, source: "default" },
      }),
    });
    expect(await line(mac)).toBe(
      "• platform: darwin-arm64; has a process table (start times), port holders; lacks a child subreaper, a death watch (models die with qm): each model's process group is stopped as a whole, and one that leaves its group can outlive qm (docs/security.md); unified memory: the GPU may use 48.0 of 64.0 GB (Metal's default share), what vram_budget_gb = \"auto\" plans for",
    );
    expect((await doctor(toml, mac)).code).toBe(0);
  });

  test("checks are a list: one more is one more entry; a check that throws is a failed line, not a crash", async () => {
    const extra: DoctorCheck = {
      id: "vendor",
      run: () => [{ name: "vendor", ok: true, detail: "fine" }],
    };
    const broken: DoctorCheck = {
      id: "node",
      run: () => {
        throw new Error("boom");
      },
    };
    const path = join(dir, "list.toml");
    await writeFile(path, `[server]\nstate_dir = "${dir}/s"\n`);
    let out = "";
    const code = await doctorCommand(["-c", path], {
      out: (t) => {
        out += t;
      },
      deps: box(),
      checks: [extra, broken],
    });
    expect(code).toBe(1);
    expect(out).toBe(
      "✓ vendor: fine\n✗ node: the check itself failed: boom — fix: report this as a bug in qm\n1 of 2 checks failed\n",
    );
  });
});

describe("qm doctor, the binary", () => {
  test("on the shipped config: a line per check, the exit status says whether one failed", () => {
    const run = Bun.spawnSync([QM, "doctor", "-c", join(ROOT, "quartermaster.toml")], {
      cwd: ROOT,
      env: { ...process.env, QM_CONFIG: "" },
    });
    const out = run.stdout.toString();
    const lines = out.trimEnd().split("\n");
    for (const name of [
      "platform",
      "config",
      "program demo-chat",
      "port 127.0.0.1:8080",
      "state dir",
      "gpu",
      "api key",
    ]) {
      expect(lines.some((l) => /^[✓✗•] /.test(l) && l.slice(2).startsWith(`${name}:`))).toBe(true);
    }
    expect(run.exitCode).toBe(lines.some((l) => l.startsWith("✗")) ? 1 : 0);
    const json = Bun.spawnSync([QM, "doctor", "--json", "-c", join(ROOT, "quartermaster.toml")], {
      cwd: ROOT,
    });
    const parsed = JSON.parse(json.stdout.toString()) as { ok: boolean; checks: unknown[] };
    expect(parsed.ok).toBe(json.exitCode === 0);
    expect(parsed.checks.length).toBe(lines.length - 1);
    expect(Bun.spawnSync([QM, "doctor", "--help"]).stdout.toString()).toContain(
      "qm doctor [-c FILE] [--json]",
    );
  });
});
