import { join } from "node:path";
import { buildApp } from "../api/app.ts";
import { metricsHandler } from "../api/control/observe-routes.ts";
import type { ObserveGateway } from "../api/gateway.ts";
import { parseHostPort } from "../config/index.ts";
import type { Config } from "../config/types.ts";
import { killAllSync, startSupervision } from "../process/index.ts";
import { describePortHolder } from "../process/port-holder.ts";
import { systemClock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { isLoopbackName } from "../shared/net.ts";
import { realTimers } from "../shared/timer.ts";
import { DB_FILE, StateDb } from "../store/database.ts";
import type { ConfigLoader } from "./reload.ts";
import { ConfigWatch } from "./reload-watch.ts";
import { Runtime } from "./runtime.ts";

export interface RunningServer {
  runtime: Runtime;
  /** `http://host:port` of every API listener, in config order (real ports when 0 was asked). */
  urls: string[];
  /** `http://host:port` of the metrics listener (`server.metrics_listen`), or null. */
  metricsUrl: string | null;
  /** Graceful stop: refuse new work, let in-flight requests finish (bounded), stop every model. */
  stop(): Promise<void>;
}

type Listener = ReturnType<typeof Bun.serve>;

/**
 * Bodies are bounded by qm itself (the edge refuses a declared length over `max_body_mb`, and
 * body readers count what arrives), so it can answer in the API's envelope; Bun's own limit,
 * which answers with a bare 413, is set past anything qm would accept.
 */
const BUN_BODY_LIMIT = Number.MAX_SAFE_INTEGER;

export interface ServeOptions {
  /** How a config reload reads the file (the loader `qm serve` used); default `config.file`'s. */
  loadConfig?: ConfigLoader;
}

/** Starts every listener on one shared runtime (one scheduler for all ports). */
export function startServer(config: Config, log: Logger, opts: ServeOptions = {}): RunningServer {
  // Before any model starts: what a crashed qm left behind may hold their ports.
  const supervision = startSupervision({ stateDir: config.server.stateDir, log });
  const db = openDatabase(config, log);
  const runtime = new Runtime(config, {
    clock: systemClock,
    log,
    loadTimesFile: join(config.server.stateDir, "load-times.json"),
    db,
    ...(opts.loadConfig ? { loadConfig: opts.loadConfig } : {}),
  });
  runtime.start();
  db?.start(realTimers);
  // `server.watch_config`: a change on disk reloads (src/runtime/reload.md).
  const watch =
    config.server.watchConfig && config.file !== ""
      ? new ConfigWatch({
          file: config.file,
          timers: realTimers,
          log,
          reload: () => runtime.reloadConfig(),
        })
      : null;
  watch?.start();
  runtime.reloads.subscribe(() => watch?.sync());
  const servers: Listener[] = [];
  const urls: string[] = [];
  let metricsUrl: string | null = null;
  try {
    config.server.listen.forEach((address, i) => {
      const hp = parseHostPort(address);
      if (!hp) throw new Error(`bad listen address "${address}"`);
      const { host, port } = hp;
      const app = buildApp(runtime, { loopback: isLoopbackName(host), log });
      const server = bindListener(`server.listen[${i}]`, address, () =>
        Bun.serve({
          hostname: host,
          port,
          reusePort: false,
          maxRequestBodySize: BUN_BODY_LIMIT,
          // Inference routes switch the idle timeout off for their own requests.
          idleTimeout: 30,
          development: false,
          fetch: (request, srv) => app.fetch(request, srv),
        }),
      );
      servers.push(server);
      urls.push(urlOf(host, server.port));
    });
    const metrics = config.server.metricsListen;
    if (metrics) {
      const hp = parseHostPort(metrics);
      if (!hp) throw new Error(`bad metrics_listen address "${metrics}"`);
      const server = bindListener("server.metrics_listen", metrics, () =>
        serveMetrics(runtime, hp.host, hp.port, log, config.server.allowedHosts),
      );
      servers.push(server);
      metricsUrl = urlOf(hp.host, server.port);
    }
  } catch (err) {
    for (const s of servers) void s.stop(true);
    watch?.stop();
    db?.close();
    supervision.close();
    throw err;
  }

  // Listeners first: a preload never keeps qm from answering.
  void runtime.startPreload();

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      watch?.stop();
      runtime.beginShutdown();
      // Stop listening at once; requests already running get until the deadline.
      const closing = servers.map((s) => s.stop(false));
      const deadline = Date.now() + config.server.shutdownTimeoutS * 1000;
      while (runtime.inflight() > 0 && Date.now() < deadline) await Bun.sleep(20);
      if (runtime.inflight() > 0) {
        log.warn(`cutting ${runtime.inflight()} request(s) still running after the shutdown grace`);
        runtime.cutInflight();
      }
      await Promise.race([Promise.all(closing), Bun.sleep(1000)]);
      await Promise.all(servers.map((s) => s.stop(true)));
      await runtime.stopAll();
      db?.close();
      supervision.close();
    })();
    return stopping;
  };
  // Whatever ends this process, no model process outlives it.
  process.on("exit", () => killAllSync());
  return { runtime, urls, metricsUrl, stop };
}

/**
 * Binds one listener, or throws a sentence naming the port, the key it comes from and, when
 * it can be found, the process holding it. Every listener is bound with `reusePort: false`:
 * Bun's production mode (`development: false`) otherwise sets SO_REUSEPORT, so a second qm
 * (or any program that sets it too) would bind the same port and the kernel would split the
 * connections between two schedulers — two VRAM accountings, answers at random.
 */
export function bindListener(key: string, address: string, bind: () => Listener): Listener {
  try {
    return bind();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const port = parseHostPort(address)?.port ?? 0;
    if (code === "EADDRINUSE") {
      throw new Error(
        `port ${port} is already in use (${key} = "${address}"), by ${describePortHolder(port)}: stop it, or choose another port`,
      );
    }
    if (code === "EADDRNOTAVAIL") {
      throw new Error(
        `cannot listen on ${address} (${key}): no network interface of this machine has that address`,
      );
    }
    if (code === "EACCES") {
      throw new Error(
        `cannot listen on ${address} (${key}): permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)`,
      );
    }
    throw err;
  }
}

/**
 * The database in `server.state_dir` (`[store]`), or null: off, or it cannot be opened — which
 * is said at start, and qm serves on with memory only (src/store/design.md).
 */
function openDatabase(config: Config, log: Logger): StateDb | null {
  if (!config.store.enabled) return null;
  const opened = StateDb.open(join(config.server.stateDir, DB_FILE), {
    bounds: { maxAgeMs: config.store.maxAgeMs, maxBytes: config.store.maxBytes },
    log,
  });
  if (opened.ok) return opened.db;
  log.warn(
    `the database cannot be used: ${opened.reason}; qm runs with memory only (stored responses, the activity log and usage are lost when it stops; 'qm doctor' checks it)`,
  );
  return null;
}

function urlOf(host: string, port: number | undefined): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The metrics listener: `GET /metrics` and nothing else (no API key: bind it for the scraper). */
export function serveMetrics(
  gw: ObserveGateway,
  host: string,
  port: number,
  log: Logger,
  allowedHosts: readonly string[] = [],
): Listener {
  const handle = metricsHandler(gw, log, { allowedHosts, loopback: isLoopbackName(host) });
  return Bun.serve({
    hostname: host,
    port,
    reusePort: false, // see bindListener
    idleTimeout: 30,
    development: false,
    fetch: handle,
  });
}
