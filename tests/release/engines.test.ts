/**
 * Node's part is npm and Bun's installer: package.json states what that needs (Node 20, as
 * Debian ships), lets Bun's installer run under npm's allowScripts, and `npm start`/`npm test`
 * on Node 20 say nothing about a dependency's `engines.node` (those dependencies run under Bun).
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { ROOT } from "../support/qm-process.ts";

const NPM_CI_ON_NODE_20 = `npm warn EBADENGINE Unsupported engine {
npm warn EBADENGINE   package: 'openai@7.59.0',
npm warn EBADENGINE   required: { node: '>=22.0.0' },
npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '11.19.1' }
npm warn EBADENGINE }
npm warn EBADENGINE Unsupported engine {
npm warn EBADENGINE   package: '@scope/tool@1.0.0',
npm warn EBADENGINE   required: { node: '>=24' },
npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '11.19.1' }
npm warn EBADENGINE }
npm warn EBADENGINE Unsupported engine {
npm warn EBADENGINE   package: 'quartermaster@0.1.0',
npm warn EBADENGINE   required: { bun: '1.4.5', node: '>=99' },
npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '11.19.1' }
npm warn EBADENGINE }
npm warn deprecated something@1.0.0: use another
`;

test("npm ci's engine warnings about dependencies are dropped; qm's own and other warnings stay", async () => {
  const path: string = join(ROOT, "scripts/ensure-deps.mjs");
  const { dropDependencyEngineWarnings } = await import(path);
  expect(
    dropDependencyEngineWarnings(NPM_CI_ON_NODE_20),
  ).toBe(`npm warn EBADENGINE Unsupported engine {
npm warn EBADENGINE   package: 'quartermaster@0.1.0',
npm warn EBADENGINE   required: { bun: '1.4.5', node: '>=99' },
npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '11.19.1' }
npm warn EBADENGINE }
npm warn deprecated something@1.0.0: use another
`);
});

test("package.json: Node 20 or newer, Bun pinned, Bun's installer allowed to run", () => {
  expect(pkg.engines).toEqual({ bun: "1.4.5", node: ">=20" });
  expect(pkg.packageManager).toBe(`bun@${pkg.engines.bun}`);
  expect(pkg.devDependencies.bun).toBe(pkg.engines.bun);
  expect(pkg.allowScripts).toEqual({ bun: true });
});
