/** The dashboard's static files: no data in them, so the edge serves them without an API key. */
export const UI_ASSET_PATHS: ReadonlySet<string> = new Set([
  "/ui",
  "/ui/",
  "/ui/app.js",
  "/ui/app.css",
]);
