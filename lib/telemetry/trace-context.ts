// W3C Trace Context (https://www.w3.org/TR/trace-context/) as accepted from clients: over REST
// headers, the WebSocket upgrade, hello and start commands. What it returns goes on as HTTP
// headers (to the ML service) and Pub/Sub attributes, so anything outside the grammar — CR/LF,
// non-ASCII, 100 KB — is dropped here rather than failing those calls. A client's trace context
// never fails its request: invalid parts are dropped, as the spec asks of receivers.

/** `{traceparent}` or `{traceparent, tracestate}`: spread as headers or message attributes. */
export type TraceContext = Record<string, string>;

// version-traceid-parentid-flags, lowercase hex. Version ff is invalid; a later version may add
// fields, which we do not forward (the context is then dropped).
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ZERO = /^0+$/;

// list-member = key "=" value; key = simple-key / tenant-id "@" system-id; value = printable
// ASCII without ',' and '=', no trailing space, 1–256 chars.
const MEMBER =
  /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
export const TRACESTATE_MAX_MEMBERS = 32;
export const TRACESTATE_MAX_CHARS = 512;

export function validTraceparent(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = TRACEPARENT.exec(value);
  return m !== null && m[1] !== 'ff' && !ZERO.test(m[2]) && !ZERO.test(m[3]);
}

/** tracestate as the spec's grammar allows it (at most 32 members, 512 chars), else null. */
export function validTracestate(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > TRACESTATE_MAX_CHARS) return null;
  // Empty members (and spaces/tabs around commas) are allowed and dropped.
  const members = value
    .split(',')
    .map((m) => m.replace(/^[ \t]+|[ \t]+$/g, ''))
    .filter((m) => m !== '');
  if (members.length === 0 || members.length > TRACESTATE_MAX_MEMBERS || !members.every((m) => MEMBER.test(m)))
    return null;
  const keys = members.map((m) => m.slice(0, m.indexOf('=')));
  if (new Set(keys).size !== keys.length) return null; // duplicate keys are invalid
  return members.join(',');
}

/**
 * The trace context to carry on, or null: without a valid traceparent nothing is kept (a
 * tracestate means nothing without it); an invalid tracestate alone is dropped.
 */
export function validTraceContext(
  input: { traceparent?: unknown; tracestate?: unknown } | null | undefined,
): TraceContext | null {
  if (!input || !validTraceparent(input.traceparent)) return null;
  const tracestate = validTracestate(input.tracestate);
  return tracestate === null ? { traceparent: input.traceparent } : { traceparent: input.traceparent, tracestate };
}

/** The trace id of a valid W3C trace context, for log lines (the traceparent's second field). */
export function traceIdOf(trace: TraceContext | null | undefined): string | undefined {
  return trace?.traceparent?.split('-')[1];
}
