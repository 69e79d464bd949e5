/** Stand-alone entry for tests and scripts: `bun src/demo/cli.ts --port 0 --name demo`. */
import { runDemoUpstream } from "./upstream.ts";

await runDemoUpstream(process.argv.slice(2));
// Open keep-alive sockets or timers must not keep a stopped demo alive.
process.exit(process.exitCode ?? 0);
