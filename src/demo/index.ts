export { DEFAULT_DEMO_OPTIONS, DEMO_HELP, type DemoOptions, parseDemoFlags } from "./flags.ts";
export { type DemoServer, startDemoServer } from "./server.ts";
export { runDemoUpstream } from "./upstream.ts";
