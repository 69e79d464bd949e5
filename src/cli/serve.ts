import { join } from "node:path";
import { isPortFreeOnLoopback, loadConfigFile } from "../config/index.ts";
import { missingPrograms } from "../config/programs.ts";
import { shownUrl } from "../peers/target.ts";
import { type RunningServer, startServer } from "../runtime/serve.ts";
import { createLogger, fallbackSink, ignoreStdoutErrors, LogFeed } from "../shared/log.ts";
import { VERSION } from "../version.ts";
import { configFromArgs, qmBin } from "./config-path.ts";
import { hangupRule } from "./hangup.ts";
import { SERVE_HELP } from "./help.ts";

/** Where the log goes on once stderr stops taking lines, inside `server.state_dir`. */
export const LOG_FILE = "qm.log";

/** `fetchLimit`: the warning `raiseFetchLimit` returned, if any (src/cli/fetch-limit.ts). */
export async function serveCommand(
  argv: string[],
  fetchLimit: string | null = null,
): Promise<number> {
  const loaded = configFromArgs(argv, SERVE_HELP);
  if ("exit" in loaded) return loaded.exit;
  const config = loaded.config;
  // A closed pipe or terminal never stops qm: its log goes on in the state dir.
  ignoreStdoutErrors();
  const sink = fallbackSink({ file: join(config.server.stateDir, LOG_FILE) });
  const log = createLogger(config.server.logLevel, sink, undefined, new LogFeed());
  if (fetchLimit !== null) log.warn(fetchLimit);
  let server: RunningServer | undefined;
  let stop: ((why: string) => void) | undefined;
  let hungUp = false;
  // SIGHUP: a reload, or the terminal going away (src/cli/hangup.ts). Installed before
  // anything listens, so no SIGHUP can arrive while the default action (exit) still applies.
  const hangup = hangupRule();
  process.on("SIGHUP", () => {
    const action = hangup.action();
    if (action === "ignore") {
      log.warn("SIGHUP: the terminal closed; started with nohup, so serving on");
    } else if (action === "stop") {
      if (hungUp) return; // the shell and the kernel may both send it
      hungUp = true;
      sink.abandon("the terminal closed");
      stop?.("SIGHUP (the terminal closed)");
    } else if (server) {
      log.info("SIGHUP: reloading the config");
      server.runtime.reloadConfig();
    }
  });
  try {
    server = startServer(config, log, {
      // The loader this command used, ports qm's models hold counted as taken.
      loadConfig: (isPortFree) =>
        loadConfigFile(loaded.path, {
          qmBin: qmBin(),
          isPortFree: (port) => isPortFree(port) && isPortFreeOnLoopback(port),
        }),
    });
  } catch (err) {
    log.error(`cannot start: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  const running = server;
  const ids = Object.keys(config.models);
  log.info(`qm ${VERSION} serving ${ids.length} model(s) from ${loaded.path}: ${ids.join(", ")}`);
  for (const url of running.urls) log.info(`listening on ${url}`);
  const keyNames = [
    ...(config.server.apiKeys.length > 0 ? ["admin"] : []),
    ...Object.keys(config.keys),
  ];
  if (keyNames.length > 0) log.info(`keys: ${keyNames.join(", ")}`);
  for (const w of missingPrograms(Object.values(config.models))) log.warn(w);
  if (running.metricsUrl) log.info(`metrics on ${running.metricsUrl}/metrics`);
  const peers = Object.values(config.peers);
  if (peers.length > 0) {
    log.info(`peers: ${peers.map((p) => `${p.id} (${p.kind}, ${shownUrl(p.url)})`).join(", ")}`);
  }

  return new Promise<number>((resolve) => {
    let stopping = false;
    stop = (why) => {
      if (stopping) return;
      stopping = true;
      log.info(
        `${why}: finishing in-flight requests, then stopping every model (Ctrl-C again to force)`,
      );
      running.stop().then(
        () => {
          log.info("stopped");
          resolve(0);
        },
        (err) => {
          log.error(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
          resolve(1);
        },
      );
    };
    const onSignal = (sig: NodeJS.Signals) => {
      if (stopping) {
        log.warn(`${sig} again: stopping now`);
        process.exit(1); // the exit hook kills every model process group
      }
      stop?.(sig);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    if (hungUp) stop("SIGHUP (the terminal closed)");
  });
}
