// The WebSocket edge's one error mapping, the twin of lib/errors/problem.ts (HTTP): a domain
// error becomes a close code (hello: the connection cannot go on) or an `error` message with a
// protocol code (a command refused; the connection goes on). Adapter errors become domain errors
// first, in lib/errors/problem.ts's `domainErrorOf`. An error with no row here is not the
// client's: the connection closes with 1011 (connection.ts).
import { DomainError, type ErrorCode as DomainErrorCode } from '@mi/lib/errors';
import { domainErrorOf } from '@mi/lib/errors/problem';
import { CloseCode, type ErrorCode } from './protocol';

type Close = { close: (typeof CloseCode)[keyof typeof CloseCode]; reason: string };
export type WsError = Close | { error: ErrorCode; message: string };

const WS_ERRORS: Partial<Record<DomainErrorCode, Close | { error: ErrorCode }>> = {
  // The hello's credentials.
  unauthorized: { close: CloseCode.unauthorized, reason: 'invalid or expired credentials' },
  account_conflict: { close: CloseCode.accountConflict, reason: 'another account already uses this email address' },
  // Starting a take (the one command that runs a use case).
  not_found: { error: 'meeting_not_found' },
  invalid_state: { error: 'not_a_recording_meeting' },
  recording_open: { error: 'recording_open' },
};

/** The client's answer to `err`, or null when it is not the client's (the caller rethrows: 1011). */
export function toWsError(err: unknown): WsError | null {
  const e = domainErrorOf(err);
  const row = e instanceof DomainError ? WS_ERRORS[e.code] : undefined;
  if (!row) return null;
  return 'close' in row ? row : { error: row.error, message: (e as DomainError).message };
}
