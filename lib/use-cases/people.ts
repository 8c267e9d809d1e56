// People (the caller's contacts), the caller's own person, and summaries about people.
import * as people from '../repositories/people';
import type { Person } from '../repositories/people';
import { mergePeople } from '../repositories/person-merge';
import * as summaries from '../repositories/person-summaries';
import type { PersonSummary } from '../repositories/person-summaries';
import type { User } from '../repositories/users';
import { notFound, unprocessable } from '../errors';
import { changed } from '../events/catalogue';
import { checkPrecondition, userOf, type Precondition, type UseCase } from './use-case';

export const createPerson: UseCase<people.PersonInput, Person> = async (ctx, body) => {
  const userId = userOf(ctx);
  const person = await people.createPerson(ctx.tx, userId, body);
  ctx.emit(userId, changed('person', 'created', person.id, null));
  return person;
};

export const updatePerson: UseCase<
  { id: string; patch: people.PersonPatch; precondition?: Precondition },
  Person
> = async (ctx, { id, patch, precondition }) => {
  const userId = userOf(ctx);
  // guard: person-patch-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match PATCH of a 'person'
  await checkPrecondition(precondition, () => people.getPerson(ctx.tx, { userId }, id, { forUpdate: true }));
  const person = await people.updatePerson(ctx.tx, { userId }, id, patch);
  if (!person) throw notFound('person');
  ctx.emit(userId, changed('person', 'updated', id, null));
  return person;
};

export const deletePerson: UseCase<{ id: string; precondition?: Precondition }, void> = async (
  ctx,
  { id, precondition },
) => {
  const userId = userOf(ctx);
  // guard: person-delete-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match DELETE of a 'person'
  await checkPrecondition(precondition, () => people.getPerson(ctx.tx, { userId }, id, { forUpdate: true }));
  if (!(await people.deletePerson(ctx.tx, { userId }, id))) throw notFound('person');
  ctx.emit(userId, changed('person', 'deleted', id, null));
};

/** Two of the caller's people are one: everything of `otherId` moves to `id`, and `otherId` is deleted. */
export const mergePerson: UseCase<{ id: string; otherId: string }, Person> = async (ctx, { id, otherId }) => {
  const userId = userOf(ctx);
  const { person, ownPersonMoved } = await mergePeople(ctx.tx, userId, id, otherId);
  ctx.emit(userId, changed('person', 'updated', id, null));
  ctx.emit(userId, changed('person', 'deleted', otherId, null));
  if (ownPersonMoved) ctx.emit(userId, changed('user', 'updated', userId, null));
  return person;
};

/** Which of the caller's people is the caller (null: none). */
export const setMyPerson: UseCase<{ personId: string | null }, User> = async (ctx, { personId }) => {
  const userId = userOf(ctx);
  const user = await people.setOwnPerson(ctx.tx, userId, personId);
  if (!user) throw unprocessable('person_id does not exist', [{ path: 'person_id', message: 'person does not exist' }]);
  ctx.emit(userId, changed('user', 'updated', userId, null));
  return user;
};

export const createPersonSummary: UseCase<
  { personId: string; body: Parameters<typeof summaries.createSummary>[3] },
  PersonSummary
> = async (ctx, { personId, body }) => {
  const userId = userOf(ctx);
  const summary = await summaries.createSummary(ctx.tx, userId, personId, body);
  if (!summary) throw notFound('person');
  ctx.emit(userId, changed('person_summary', 'created', summary.id, null));
  return summary;
};

export const updatePersonSummary: UseCase<{ id: string; patch: summaries.SummaryPatch }, PersonSummary> = async (
  ctx,
  { id, patch },
) => {
  const updated = await summaries.updateSummary(ctx.tx, { userId: userOf(ctx) }, id, patch);
  if (!updated) throw notFound('person summary');
  const { owner_id, ...summary } = updated;
  ctx.emit(owner_id, changed('person_summary', 'updated', id, null));
  return summary;
};

export const deletePersonSummary: UseCase<{ id: string }, void> = async (ctx, { id }) => {
  const deleted = await summaries.deleteSummary(ctx.tx, { userId: userOf(ctx) }, id);
  if (!deleted) throw notFound('person summary');
  ctx.emit(deleted.owner_id, changed('person_summary', 'deleted', id, null));
};
