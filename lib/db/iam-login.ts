// Cloud SQL IAM database authentication (DB_IAM_AUTH): a unit logs in as its service account,
// presenting an OAuth access token of scope sqlservice.login as each new connection's password.
// The token comes from the metadata server; google-auth-library caches it and fetches a new one
// before it expires (an hour), so only new connections wait for it, and rarely. No token: the
// connection fails as unavailable (503, pool.ts), as when the database itself is unreachable.
import type { GoogleAuth } from 'google-auth-library';

const SCOPE = 'https://www.googleapis.com/auth/sqlservice.login';

export function iamLoginToken(): () => Promise<string> {
  // Loaded on first use: processes without IAM login never load the library.
  let auth: Promise<GoogleAuth> | null = null;
  return async () => {
    auth ??= import('google-auth-library').then(({ GoogleAuth }) => new GoogleAuth({ scopes: [SCOPE] }));
    const token = await (await auth).getAccessToken().catch((err: Error) => {
      throw new Error(`DB_IAM_AUTH: no access token for the database login (${err.message})`);
    });
    if (!token) throw new Error('DB_IAM_AUTH: no access token for the database login');
    return token;
  };
}
