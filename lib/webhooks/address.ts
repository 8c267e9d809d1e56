// Where a webhook may point (decisions.md section 7). In staging and production: https only, and
// every address the host resolves to must be public unicast (no private, loopback, link-local,
// metadata, carrier-grade NAT or reserved range); the same check runs again at each delivery, on
// the address the request then connects to (send.ts), so DNS cannot be switched after creation.
// An IPv6 address that embeds an IPv4 one is judged by the IPv4 address.
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

/**
 * A public unicast address. An IPv6 address that embeds IPv4 (decisions.md section 8) is judged
 * by what it embeds: IPv4-compatible `::a.b.c.d`, mapped `::ffff:a.b.c.d`, translated
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo `2001::/32` (its server and
 * its client, both). Local-use NAT64 (`64:ff9b:1::/48`) leads to private networks: refused.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return ip.range() === 'unicast';
  const v6 = ip as ipaddr.IPv6;
  if (v6.match(LOCAL_NAT64)) return false;
  const embedded = embeddedIPv4(v6);
  if (embedded) return embedded.every((v4) => v4.range() === 'unicast');
  return v6.range() === 'unicast';
}

const LOCAL_NAT64 = ipaddr.parseCIDR('64:ff9b:1::/48') as [ipaddr.IPv6, number];
const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/** The IPv4 addresses an IPv6 address carries, or null when it carries none. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] | null {
  const p = ip.parts;
  switch (ip.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return [v4(p[6], p[7])];
    case '6to4':
      return [v4(p[1], p[2])];
    case 'teredo': // the server, then the client (stored inverted)
      return [v4(p[2], p[3]), v4(p[6] ^ 0xffff, p[7] ^ 0xffff)];
  }
  // IPv4-compatible (deprecated): 96 zero bits, then the address; :: and ::1 land in 0.0.0.0/8.
  return p.slice(0, 6).every((x) => x === 0) ? [v4(p[6], p[7])] : null;
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

/** How long a URL check at creation or update waits for the host to resolve (a delivery's own budget is send.ts's). */
export const CHECK_RESOLVE_TIMEOUT_MS = 10_000;

/** Throws 422 unprocessable (field `url`) for a URL a webhook may not use in this environment. */
export async function checkWebhookUrl(
  raw: string,
  env: AppEnv,
  resolve: Resolve = resolveAll,
  timeoutMs = CHECK_RESOLVE_TIMEOUT_MS,
): Promise<void> {
  const problem =
    urlFormProblem(raw, env) ??
    (checksAddresses(env) ? problemOf(await resolveWithin(hostOf(new URL(raw)), resolve, timeoutMs)) : null);
  if (problem) throw unprocessable(problem, [{ path: 'url', message: problem }]);
}

/** resolvePublic, or a problem once `timeoutMs` passed: a resolver that never answers cannot hold a request. */
function resolveWithin(host: string, resolve: Resolve, timeoutMs: number): ReturnType<typeof resolvePublic> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ problem: string }>((r) => {
    timer = setTimeout(
      () => r({ problem: `url host ${host} did not resolve within ${timeoutMs / 1000} s` }),
      timeoutMs,
    );
  });
  return Promise.race([resolvePublic(host, resolve), late]).finally(() => clearTimeout(timer));
}

const problemOf = (r: { problem: string } | { addresses: string[] }) => ('problem' in r ? r.problem : null);
