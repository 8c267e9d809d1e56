// Single byte ranges of the Range header (RFC 9110 14.1.2): `bytes=a-b`, `bytes=a-`, `bytes=-n`.

export type RangeResult =
  | { kind: 'full' }
  | { kind: 'partial'; start: number; end: number }
  | { kind: 'unsatisfiable' };

/** Several ranges or an unknown unit are ignored (a full answer is allowed for those). */
export function parseRange(header: string | undefined, size: number): RangeResult {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'full' };
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return { kind: 'full' }; // invalid range-spec: ignored
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end };
}
