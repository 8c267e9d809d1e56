// Bundles the console's browser code in memory with esbuild, once per process (on first
// request), so `npm start` needs no build step and nothing is fetched from a CDN.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface ConsoleAssets {
  /** The page script (ES module). */
  app: string;
  /** The page's stylesheet. */
  css: string;
  /** The AudioWorklet module that turns microphone audio into 100 ms PCM frames. */
  worklet: string;
}

let assets: Promise<ConsoleAssets> | null = null;

export function consoleAssets(): Promise<ConsoleAssets> {
  assets ??= build().catch((err) => {
    assets = null; // a later request tries again (e.g. after the source was fixed)
    throw err;
  });
  return assets;
}

async function build(): Promise<ConsoleAssets> {
  // esbuild is a development dependency: loaded only when the console is served.
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: { app: path.join(here, 'client/main.ts'), worklet: path.join(here, 'client/recorder-worklet.ts') },
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    outdir: '/console',
    sourcemap: 'inline',
    logLevel: 'silent',
  });
  const byName = (name: string) => {
    const file = result.outputFiles.find((f) => path.basename(f.path) === name);
    if (!file) throw new Error(`console bundle: ${name} missing`);
    return file.text;
  };
  return { app: byName('app.js'), css: byName('app.css'), worklet: byName('worklet.js') };
}
