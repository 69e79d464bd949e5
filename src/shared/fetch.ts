/**
 * How qm calls other servers (model upstreams, health checks, peers, a model's sleep and slots
 * APIs): a `fetch` handed in through each caller's deps, the global one when absent, so tests
 * pass a fake instead of replacing `globalThis.fetch` under everything else in the process.
 */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>;
