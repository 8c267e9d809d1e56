// `npm run build`: the deployable units. esbuild bundles our TypeScript (functions/, run-services/,
// lib/) into one ESM file per unit and leaves npm packages external; each dist/ gets a
// package.json listing exactly those runtime dependencies (and, with --lock, a lock file for the
// container's `npm ci`). Beside each unit's file goes the telemetry preload
// (lib/telemetry/register.ts → telemetry-register.js), which every unit starts with
// (`node --import ./telemetry-register.js`: the live Dockerfile's CMD, the functions' NODE_OPTIONS).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { DOCS_ASSET, DOCS_ASSET_DIR, packagedAsset } from '../functions/api/docs-page';

const root = path.resolve(import.meta.dirname, '..');
const readJson = (p: string) => JSON.parse(readFileSync(path.join(root, p), 'utf8'));

// OpenTelemetry's packages go into the bundle: they pin one another exactly, so npm may nest them
// under a workspace (lib/node_modules), where a unit's dist/ could not resolve them. Copies of
// @opentelemetry/api (ours bundled, the Google clients' own) share one global registry by design.
// The preload has its own bundled copies; initTelemetry hands its instrumentations the tracer
// provider explicitly (telemetry.ts), since a copy's proxy provider learns only of its own setting.
const bundled = (name: string) => name.startsWith('@opentelemetry/');

/** The preload every unit starts with (`node --import`), next to the unit's main file. */
export const PRELOAD = 'telemetry-register.js';

/**
 * What Terraform sets on both functions to start them with the preload (function_telemetry_env in
 * infra/modules/services/functions.tf, checked by test/infra.test.ts): the deploy test and
 * bench:api start the api bundle with it. Their apps make each request's server span themselves.
 */
export const FUNCTION_PRELOAD_ENV = { NODE_OPTIONS: `--import=./${PRELOAD}`, OTEL_HTTP_SERVER_SPANS: 'app' };

/** Runtime dependencies of the workspaces left external, with the versions the lock file resolved. */
function runtimeDependencies(): Record<string, string> {
  const lock = readJson('package-lock.json');
  const deps: Record<string, string> = {};
  for (const ws of ['lib', 'functions', 'run-services/live']) {
    for (const name of Object.keys(readJson(`${ws}/package.json`).dependencies ?? {}).filter((n) => !bundled(n))) {
      deps[name] = lock.packages[`node_modules/${name}`]?.version ?? readJson(`${ws}/package.json`).dependencies[name];
    }
  }
  return Object.fromEntries(Object.entries(deps).sort());
}

async function bundle(
  unit: { entry: string; outDir: string; main: string; start?: string },
  deps: Record<string, string>,
  lock: boolean,
) {
  const outDir = path.join(root, unit.outDir);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: {
      [unit.main.replace(/\.js$/, '')]: path.join(root, unit.entry),
      [PRELOAD.replace(/\.js$/, '')]: path.join(root, 'lib/telemetry/register.ts'),
    },
    outdir: outDir,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    sourcemap: true,
    external: Object.keys(deps),
    // ESM output still meets CommonJS-style code in some bundled files.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'warning',
  });
  const pkg = {
    name: path.basename(path.dirname(outDir)),
    private: true,
    type: 'module',
    main: unit.main,
    engines: { node: '>=20.19' },
    ...(unit.start ? { scripts: { start: unit.start } } : {}),
    dependencies: deps,
  };
  writeFileSync(path.join(outDir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  if (lock)
    execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: outDir,
      stdio: 'inherit',
    });
}

export async function buildAll(opts: { lock?: boolean } = {}) {
  const deps = runtimeDependencies();
  // The functions source also needs the framework that serves its targets.
  await bundle(
    {
      entry: 'functions/index.ts',
      outDir: 'functions/dist',
      main: 'index.js',
      start: 'functions-framework --target=api',
    },
    deps,
    !!opts.lock,
  );
  // The docs page's one asset travels with the api bundle (its package is a devDependency).
  mkdirSync(path.join(root, 'functions/dist', DOCS_ASSET_DIR));
  copyFileSync(packagedAsset(), path.join(root, 'functions/dist', DOCS_ASSET_DIR, DOCS_ASSET));
  await bundle(
    {
      entry: 'run-services/live/server.ts',
      outDir: 'run-services/live/dist',
      main: 'server.js',
      start: `node --import ./${PRELOAD} server.js`,
    },
    deps,
    !!opts.lock,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildAll({ lock: process.argv.includes('--lock') });
  console.log('built functions/dist and run-services/live/dist');
}
