import { isPortFreeOnLoopback, loadConfigFile } from "../config/index.ts";
import { missingPrograms } from "../config/programs.ts";
import { startServer } from "../runtime/serve.ts";
import { createLogger } from "../shared/log.ts";
import { VERSION } from "../version.ts";
import { configFromArgs, qmBin } from "./config-path.ts";
import { SERVE_HELP } from "./help.ts";

export async function serveCommand(argv: string[]): Promise<number> {
  const loaded = configFromArgs(argv, SERVE_HELP);
  if ("exit" in loaded) return loaded.exit;
  const config = loaded.config;
  const log = createLogger(config.server.logLevel);
  // `kill -HUP` (systemd's ExecReload) reloads the config; models whose process settings did
  // not change keep running. Installed before anything listens, so no SIGHUP can arrive while
  // the default action (exit) still applies.
  let server: ReturnType<typeof startServer> | undefined;
  process.on("SIGHUP", () => {
    if (!server) return;
    log.info("SIGHUP: reloading the config");
    server.runtime.reloadConfig();
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
  const ids = Object.keys(config.models);
  log.info(`qm ${VERSION} serving ${ids.length} model(s) from ${loaded.path}: ${ids.join(", ")}`);
  for (const url of server.urls) log.info(`listening on ${url}`);
  for (const w of missingPrograms(Object.values(config.models))) log.warn(w);
  if (server.metricsUrl) log.info(`metrics on ${server.metricsUrl}/metrics`);
  const peers = Object.values(config.peers);
  if (peers.length > 0) {
    log.info(`peers: ${peers.map((p) => `${p.id} (${p.kind}, ${p.url})`).join(", ")}`);
  }

  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        log.warn(`${sig} again: stopping now`);
        process.exit(1); // the exit hook kills every model process group
      }
      log.info(
        `${sig}: finishing in-flight requests, then stopping every model (Ctrl-C again to force)`,
      );
      server.stop().then(
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
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
