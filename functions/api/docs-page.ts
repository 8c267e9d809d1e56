// The interactive docs page: Scalar's API reference, served from our own origin (no CDN) with
// everything that talks to third parties off: telemetry, its hosted fonts, the AI agent, the
// "open in Scalar's client" button and the developer tools. The standalone bundle (one file) is a
// devDependency; `npm run build` copies it beside the function bundle, so the deployed function
// carries that file and not the package's ~270 dependencies.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The one asset the page loads, under /docs/assets/. */
export const DOCS_ASSET = 'api-reference.js';
/** Where the build puts it, relative to the bundle's directory. */
export const DOCS_ASSET_DIR = 'docs-assets';

/** Scalar's configuration: nothing leaves the browser but requests to this API. */
export const SCALAR_CONFIG = {
  url: '/openapi.json',
  telemetry: false,
  withDefaultFonts: false,
  agent: { disabled: true },
  hideClientButton: true,
  showDeveloperTools: 'never',
} as const;

/** The standalone bundle inside the installed package (development, tests, the build). */
export function packagedAsset(): string {
  const require = createRequire(import.meta.url);
  // The package exports only its ESM entry (dist/index.js); the browser bundle sits beside it.
  return path.join(path.dirname(require.resolve('@scalar/api-reference')), 'browser', 'standalone.js');
}

/** The asset beside the bundle when deployed, else the package's. */
export function docsAssetPath(): string {
  const beside = path.join(path.dirname(fileURLToPath(import.meta.url)), DOCS_ASSET_DIR, DOCS_ASSET);
  return existsSync(beside) ? beside : packagedAsset();
}

export const docsHtml = () => `<!doctype html><html><head><meta charset="utf-8"><title>Meeting Intelligence API</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body><div id="app"></div>
<script src="/docs/assets/${DOCS_ASSET}"></script>
<script>Scalar.createApiReference('#app', ${JSON.stringify(SCALAR_CONFIG)});</script></body></html>`;
