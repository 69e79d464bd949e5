/**
 * The checks `qm doctor` runs, in the order it prints them. Each needs only what
 * `DoctorContext` gives; one that needs the config finds nothing to say when it did not load.
 */
import { join } from "node:path";
import { parseHostPort } from "../../config/index.ts";
import { defaultStateDir } from "../../config/load.ts";
import { isLoopbackName } from "../../shared/net.ts";
import { DB_FILE } from "../../store/database.ts";
import { type DoctorCheck, type Finding, fail, note, pass } from "./check.ts";
import { ggufCheck } from "./gguf-check.ts";
import { gpuCheck } from "./gpu-check.ts";
import { nodeCheck } from "./node-check.ts";
import { platformCheck } from "./platform-check.ts";

const configCheck: DoctorCheck = {
  id: "config",
  run({ path, config, configError }) {
    if (config) {
      const n = Object.keys(config.models).length;
      return [pass("config", `${path} is valid (${n} model${n === 1 ? "" : "s"})`)];
    }
    return [
      fail(
        "config",
        configError ?? `${path} did not load`,
        configError?.includes("no such config file")
          ? "pass -c FILE, or start from the quartermaster.toml shipped with qm ('qm scan DIR' prints model entries)"
          : `fix the lines named; 'qm config check -c ${path}' lists them all`,
      ),
    ];
  },
};

/** Models qm starts itself: not a peer's or a managed node's. */
const spawned = (ctx: Parameters<DoctorCheck["run"]>[0]) =>
  Object.values(ctx.config?.models ?? {}).filter((m) => !m.node && m.argv.length > 0);

const programsCheck: DoctorCheck = {
  id: "programs",
  run(ctx) {
    return spawned(ctx).map((m): Finding => {
      const program = m.argv[0]!;
      const found = ctx.deps.which(program, m.env.PATH ?? ctx.deps.env.PATH ?? "");
      const name = `program ${m.id}`;
      if (found)
        return pass(name, found === program ? `${found} is executable` : `${program} → ${found}`);
      return program.includes("/")
        ? fail(
            name,
            `${program} is not an executable file`,
            `check the path in models.${m.id}.cmd, or chmod +x it`,
          )
        : fail(
            name,
            `${program} was not found on PATH`,
            `install it, or give its full path in models.${m.id}.cmd`,
          );
    });
  },
};

const portsCheck: DoctorCheck = {
  id: "ports",
  run({ config, deps }) {
    if (!config) return [];
    const { listen, metricsListen } = config.server;
    const keyed: [string, string][] = listen.map((a, i) => [a, `server.listen[${i}]`]);
    if (metricsListen) keyed.push([metricsListen, "server.metrics_listen"]);
    return keyed.map(([address, key]): Finding => {
      const hp = parseHostPort(address)!;
      const name = `port ${address}`;
      if (hp.port === 0) return pass(name, "port 0: the system picks a free port at each start");
      const outcome = deps.bind(hp.host, hp.port);
      if (outcome.kind === "free") return pass(name, "free");
      if (outcome.kind === "in use") {
        return fail(
          name,
          `in use by ${outcome.holder}`,
          `stop it (if it is another qm: 'qm status --url http://${address}'), or change ${key}`,
        );
      }
      if (outcome.kind === "no such address") {
        return fail(name, "no network interface of this machine has that address", `change ${key}`);
      }
      return fail(
        name,
        "permission denied: ports below 1024 need root or CAP_NET_BIND_SERVICE",
        `choose a port above 1023 in ${key}`,
      );
    });
  },
};

const stateDirCheck: DoctorCheck = {
  id: "state-dir",
  run({ config, deps }) {
    const dir = config?.server.stateDir ?? defaultStateDir(deps.env);
    const why = deps.writable(dir);
    return [
      why === null
        ? pass("state dir", `${dir} is writable`)
        : fail(
            "state dir",
            `${dir} is not writable: ${why}`,
            "set server.state_dir to a folder qm may write, or fix the folder's permissions",
          ),
    ];
  },
};

/** `[store]`: the database opens (a read-only disk, a damaged file: qm would run on memory only). */
const databaseCheck: DoctorCheck = {
  id: "database",
  run({ config, deps }) {
    if (!config) return [];
    if (!config.store.enabled) {
      return [note("database", "[store] enabled = false: nothing outlasts a restart")];
    }
    const file = join(config.server.stateDir, DB_FILE);
    const opened = deps.database(file);
    if (!opened.ok) {
      return [
        fail(
          "database",
          `${opened.reason}: qm would run with memory only (stored responses, activity and usage lost at each restart)`,
          "make server.state_dir writable, or move the damaged qm.db aside (qm makes a new one), or set [store] enabled = false",
        ),
      ];
    }
    const mb = (opened.bytes / (1024 * 1024)).toFixed(1);
    return [
      pass(
        "database",
        `${file}: ${opened.responses} stored response(s), ${opened.requests} request record(s), ${mb} MB of ${Math.round(config.store.maxBytes / (1024 * 1024))} MB`,
      ),
    ];
  },
};

const apiKeyCheck: DoctorCheck = {
  id: "api-key",
  run({ config }) {
    if (!config) return [];
    const open = config.server.listen.filter((a) => !isLoopbackName(parseHostPort(a)!.host));
    const keys = config.server.apiKeys.length + Object.keys(config.keys).length;
    if (open.length === 0) {
      return [
        pass("api key", keys ? `${keys} key(s) set` : "listening on loopback only: no key needed"),
      ];
    }
    if (keys > 0)
      return [
        pass("api key", `${keys} key(s) set; listening beyond loopback on ${open.join(", ")}`),
      ];
    return [
      fail(
        "api key",
        `listening beyond loopback (${open.join(", ")}) with no API key: anyone who can reach it can run your models`,
        `set server.api_keys, e.g. api_keys = ["\${env.QM_API_KEY}"], or listen on 127.0.0.1`,
      ),
    ];
  },
};

/** Every check, in the order printed. Add new ones here. */
export const DOCTOR_CHECKS: readonly DoctorCheck[] = [
  platformCheck,
  configCheck,
  programsCheck,
  ggufCheck,
  portsCheck,
  stateDirCheck,
  databaseCheck,
  gpuCheck,
  apiKeyCheck,
  nodeCheck,
];
