// The caller's account.
import { requestErasure } from '../repositories/erasure';
import { userOf, type UseCase } from './use-case';

/** Records the erasure request and stops the user's open takes; the rows and objects go after (lib/repositories/erasure.ts). */
export const requestAccountErasure: UseCase<void, void> = async (ctx) => {
  await requestErasure(ctx.tx, userOf(ctx));
};
