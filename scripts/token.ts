// `npm run token -- <name>`: a development user token signed with IDENTITY_SECRET_KEY (from the
// environment, or the local stack's generated dev secrets under DATA_DIR).
import path from 'node:path';
import { mintDevToken } from '../lib/adapters/auth';
import { loadOrCreateDevSecrets } from '../emulators/dev-secrets';

const name = process.argv[2];
if (!name || !/^[\w.-]{1,64}$/.test(name)) {
  console.error('usage: npm run token -- <name>   (letters, digits, . _ -)');
  process.exit(2);
}
const appEnv = process.env.APP_ENV ?? 'development';
if (appEnv !== 'development' && appEnv !== 'test') {
  console.error(`refusing to mint a development token with APP_ENV=${appEnv}`);
  process.exit(2);
}
const secret =
  process.env.IDENTITY_SECRET_KEY ??
  loadOrCreateDevSecrets(path.resolve(process.env.DATA_DIR ?? '.data')).IDENTITY_SECRET_KEY;
console.log(await mintDevToken(secret, name));
