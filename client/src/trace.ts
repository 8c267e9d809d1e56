// W3C trace context for calls that start a trace of their own (no caller context given).
const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');

/** A fresh sampled traceparent: version 00, random trace and span ids. */
export function newTraceparent(): string {
  return `00-${hex(16)}-${hex(8)}-01`;
}

export interface TraceHeaders {
  traceparent: string;
  tracestate?: string;
}
