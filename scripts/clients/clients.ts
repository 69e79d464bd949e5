/**
 * Real agent clients against qm: installing them from npm into a cache (never into the repo's
 * node_modules), their config pointed at a qm, and the environment that keeps them on loopback.
 * Used by the client tests (tests/integration/clients/) and `scripts/clients/codex.ts`.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

/** The clients and versions the suite runs (the ones docs and captures describe). */
export const CODEX = { pkg: "@openai/codex", version: "0.171.0", bin: "codex" } as const;
export const CLAUDE_CODE = {
  pkg: "@anthropic-ai/claude-code",
  version: "2.1.197",
  bin: "claude",
} as const;

export type ClientPackage = { pkg: string; version: string; bin: string };
export type Installed = { ok: true; bin: string } | { ok: false; reason: string };

/**
 * Where clients are installed: `$QM_CLIENTS_DIR`, else `~/.cache/qm-clients`, else (no writable
 * home) `qm-clients` under the OS temp dir. One folder per package and version.
 */
export function clientsDir(): string {
  const chosen = process.env.QM_CLIENTS_DIR;
  if (chosen) return chosen;
  for (const dir of [join(homedir(), ".cache", "qm-clients"), join(tmpdir(), "qm-clients")]) {
    try {
      mkdirSync(dir, { recursive: true });
      return dir;
    } catch {
      // not writable: the next
    }
  }
  return join(tmpdir(), "qm-clients");
}

/** npm's words for a registry it could not reach. */
const UNREACHABLE =
  /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|socket hang up|getaddrinfo|\b50[234]\b/i;

/**
 * Installs `c` (once: an earlier install is reused) with `npm install --prefix`, into a staging
 * folder renamed into place, so two runs at once never see half an install. Not ok, with the
 * reason, when npm is missing or the registry cannot be reached; throws when npm fails otherwise.
 */
export async function installClient(c: ClientPackage, timeoutMs = 300_000): Promise<Installed> {
  const root = clientsDir();
  const dir = join(root, `${c.bin}-${c.version}`);
  const bin = join(dir, "node_modules", ".bin", c.bin);
  if (existsSync(bin)) return { ok: true, bin };
  if (Bun.which("npm") === null) return { ok: false, reason: "npm is not installed" };
  mkdirSync(root, { recursive: true });
  const staging = mkdtempSync(join(root, `.${c.bin}-`));
  try {
    const npm = Bun.spawn(
      [
        "npm",
        "install",
        "--prefix",
        staging,
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        `${c.pkg}@${c.version}`,
      ],
      { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    const timer = setTimeout(() => npm.kill("SIGKILL"), timeoutMs);
    const [out, err] = await Promise.all([npm.stdout.text(), npm.stderr.text()]);
    clearTimeout(timer);
    const code = await npm.exited;
    if (code !== 0) {
      const text = `${err}\n${out}`.trim();
      if (npm.signalCode !== null || UNREACHABLE.test(text)) {
        const why = npm.signalCode !== null ? `no answer in ${timeoutMs / 1000} s` : reasonIn(text);
        return { ok: false, reason: `the npm registry cannot be reached (${why})` };
      }
      throw new Error(`npm install ${c.pkg}@${c.version} failed (exit ${code}):\n${text}`);
    }
    try {
      renameSync(staging, dir);
    } catch {
      // Another run put it there first: theirs is used.
    }
    if (!existsSync(bin)) throw new Error(`npm installed ${c.pkg} without its ${c.bin} command`);
    return { ok: true, bin };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** npm's line that says why the registry could not be reached. */
function reasonIn(text: string): string {
  const lines = text.split("\n");
  const line = lines.find((l) => UNREACHABLE.test(l)) ?? lines[0]!;
  return line.replace(/^npm (error|ERR!)\s*/, "").trim();
}

/**
 * A `CODEX_HOME` config for qm at `baseUrl` (…/v1), as the README shows it: a custom provider
 * on the Responses API, with Codex's plugins, apps, shell snapshot and analytics off so it
 * stays on loopback. The key is read from `QM_API_KEY`.
 */
export function writeCodexHome(home: string, baseUrl: string, model: string): void {
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, "config.toml"),
    `model = "${model}"
model_provider = "qm"

[model_providers.qm]
name = "quartermaster"
base_url = "${baseUrl}"
wire_api = "responses"
env_key = "QM_API_KEY"

[features]
plugins = false
apps = false
shell_snapshot = false

[analytics]
enabled = false
`,
  );
}

/**
 * Claude Code's environment for qm at `url`: its key, a home of its own (its settings and
 * history stay there), and the switches that keep `-p` mode off the network.
 */
export function claudeEnv(url: string, home: string): Record<string, string> {
  mkdirSync(home, { recursive: true });
  return {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_AUTH_TOKEN: "anything",
    HOME: home,
    DISABLE_TELEMETRY: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
  };
}

/** Runs a client to its end (killed past `timeoutMs`): exit code and output. */
export async function runClient(
  argv: string[],
  opts: { env: Record<string, string>; cwd: string; timeoutMs?: number },
): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(argv, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => p.kill("SIGKILL"), opts.timeoutMs ?? 90_000);
  const [out, err] = await Promise.all([p.stdout.text(), p.stderr.text()]);
  clearTimeout(timer);
  return { code: await p.exited, out, err };
}

/** The JSON lines of a client's event stream (other lines skipped). */
export function jsonLines(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line that only looks like JSON
    }
  }
  return out;
}
