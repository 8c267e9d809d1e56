// The credential of the core's calls to the ML service (POST /streaming, the audio socket's
// upgrade, DELETE /streaming/{id}; decisions.md section 8). In staging and production: a
// Google-signed ID token of the live service's own service account, audience the ML service's
// URL (ML_SERVICE_URL), fetched by google-auth-library from the metadata server, cached and
// renewed before it expires; the ML verifies it (docs/ml-integration.md). In development and
// tests: the shared SERVICE_AUTH_TOKEN.
import { GoogleAuth } from 'google-auth-library';
import type { Config } from '../config';

/** The Authorization header value of the next call to the ML service. */
export type MlAuthorization = () => Promise<string>;

const byConfig = new WeakMap<Config, MlAuthorization>();

/** One per process (per config): the ID token client keeps its token between calls. */
export function mlAuthorization(config: Config): MlAuthorization {
  let authorization = byConfig.get(config);
  if (!authorization) {
    authorization = create(config);
    byConfig.set(config, authorization);
  }
  return authorization;
}

function create(config: Config): MlAuthorization {
  if (config.APP_ENV === 'development' || config.APP_ENV === 'test') {
    const header = `Bearer ${config.SERVICE_AUTH_TOKEN}`;
    return async () => header;
  }
  const audience = config.ML_SERVICE_URL;
  const auth = new GoogleAuth();
  let client: ReturnType<GoogleAuth['getIdTokenClient']> | null = null;
  return async () => {
    client ??= auth.getIdTokenClient(audience);
    try {
      const header = (await (await client).getRequestHeaders()).get('authorization');
      if (!header) throw new Error(`no ID token for audience ${audience}`);
      return header;
    } catch (err) {
      client = null; // asked again on the next call (the ML client retries with backoff)
      throw err;
    }
  };
}
