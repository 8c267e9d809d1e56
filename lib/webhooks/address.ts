// Where a webhook may point (decisions.md section 7). In staging and production: https only, and
// every address the host resolves to must be public unicast (no private, loopback, link-local,
// metadata, carrier-grade NAT or reserved range); the same check runs again at each delivery, on
// the address the request then connects to (send.ts), so DNS cannot be switched after creation.
// In development and test also http://localhost and http://127.0.0.1, and no address check: the
// receivers there are local.
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config';
import { unprocessable } from '../errors';

export type AppEnv = Config['APP_ENV'];

/** Resolves a host name to every address (dns.lookup's `all`); tests pass their own. */
export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

export const resolveAll: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1']);

export const checksAddresses = (env: AppEnv) => env === 'staging' || env === 'production';

/** A public unicast address; IPv4-mapped IPv6 is judged as its IPv4 address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() === 'unicast';
}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/** The reason a URL is refused by its form alone (scheme, credentials), or null. */
export function urlFormProblem(raw: string, env: AppEnv): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute URL';
  }
  if (url.username || url.password) return 'url must not carry credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && !checksAddresses(env) && LOCAL_HOSTS.has(url.hostname)) return null;
  return checksAddresses(env)
    ? 'url must use https'
    : 'url must use https (http only for localhost and 127.0.0.1 in development and test)';
}

/** The addresses of a URL's host that may be connected to, or the reason none may. */
export async function resolvePublic(
  host: string,
  resolve: Resolve,
): Promise<{ addresses: string[] } | { problem: string }> {
  let addresses: string[];
  if (ipaddr.isValid(host)) addresses = [host];
  else {
    try {
      addresses = (await resolve(host)).map((a) => a.address);
    } catch {
      return { problem: `url host ${host} does not resolve` };
    }
  }
  if (!addresses.length) return { problem: `url host ${host} does not resolve` };
  const refused = addresses.find((a) => !isPublicAddress(a));
  if (refused)
    return { problem: `url host ${host} resolves to ${refused}, a private, loopback, link-local or reserved address` };
  return { addresses };
}

/** Throws 422 unprocessable (field `url`) for a URL a webhook may not use in this environment. */
export async function checkWebhookUrl(raw: string, env: AppEnv, resolve: Resolve = resolveAll): Promise<void> {
  const problem =
    urlFormProblem(raw, env) ??
    (checksAddresses(env) ? problemOf(await resolvePublic(hostOf(new URL(raw)), resolve)) : null);
  if (problem) throw unprocessable(problem, [{ path: 'url', message: problem }]);
}

const problemOf = (r: { problem: string } | { addresses: string[] }) => ('problem' in r ? r.problem : null);
