/**
 * The routes only an admin key may use: they act on the whole box (load, unload, reload) or
 * show what belongs to no one key (model logs, a model server's own API, the metrics). Decided
 * from the path alone — the method and the model named do not matter — so a non-admin key gets
 * the same 403 for every id, and learns nothing from it. The router ignores one trailing slash,
 * so trailing slashes are ignored here too; it matches the rest of the path as sent (a `%`
 * escape in a route's fixed part never routes), so the match is on the path as sent.
 */
const ADMIN: RegExp[] = [
  /^\/api\/models\/unload$/,
  /^\/api\/models\/[^/]+\/(?:load|unload|logs)$/,
  /^\/api\/config\/reload$/,
  /^\/(?:unload|logs|logs\/stream(?:\/[^/]*)?)$/,
  /^\/upstream(?:\/|$)/,
  /^\/metrics$/,
];

export function isAdminRoute(path: string): boolean {
  const p = path.length > 1 ? path.replace(/\/+$/, "") : path;
  return ADMIN.some((r) => r.test(p));
}
