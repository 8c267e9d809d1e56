// Runs before `npm ci`/`npm install` (the root's preinstall). npm's own engine warnings are
// silenced in .npmrc (loglevel=error: ~200 EBADENGINE lines on Node 20), so this says it once.
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  console.error(
    `note: Node ${process.versions.node} here. The service is deployed on Node 24 and several Google Cloud ` +
      'clients declare node >=22; development and the tests work on Node 20.19+, but use Node 24 to match ' +
      'production (npx -y node@24 …, or your version manager).',
  );
}
