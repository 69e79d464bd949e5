/**
 * Serves a release folder over HTTP on a loopback port the kernel picks, as a release page
 * would: GET /NAME answers the file NAME in the folder (no listings, nothing outside it), so
 * install.sh can be run against a local `npm run release` folder (QM_INSTALL_BASE).
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";

export interface FolderServer {
  /** The folder's URL, without a trailing slash. */
  url: string;
  /** Every path asked for, in order. */
  requests: string[];
  stop(): void;
}

export function serveFolder(dir: string): FolderServer {
  const requests: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      requests.push(path);
      const name = path.slice(1);
      if (req.method !== "GET" || !/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith(".")) {
        return new Response("not found\n", { status: 404 });
      }
      const file = join(dir, name);
      if (!existsSync(file) || !statSync(file).isFile()) {
        return new Response("not found\n", { status: 404 });
      }
      return new Response(Bun.file(file));
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) };
}
