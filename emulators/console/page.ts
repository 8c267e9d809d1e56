// The console's HTML shell. The page learns what it needs of the server's configuration from
// the JSON block (never a secret): whether the dev-token button exists, the gap chunk bound.
export interface PageSettings {
  /** APP_ENV=development: show the "mint a development token" form. */
  devMint: boolean;
  appEnv: string;
  /** RECORDING_MAX_CHUNK_BYTES: gap uploads are split below it. */
  maxChunkBytes: number;
  /** ML_TASK_CADENCE_SEGMENTS: the ML service proposes tasks every this many final segments. */
  taskCadenceSegments: number;
}

const escapeJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

export function renderPage(settings: PageSettings): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Meeting Intelligence · developer console</title>
<link rel="stylesheet" href="/console/app.css">
<script type="application/json" id="console-settings">${escapeJson(settings)}</script>
<script type="module" src="/console/app.js"></script>
</head>
<body>
<noscript>The console needs JavaScript.</noscript>
<div id="root"></div>
</body>
</html>
`;
}
