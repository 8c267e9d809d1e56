// Notes on a person or a meeting.
import * as notes from '../repositories/notes';
import { meetingOf, type Note } from '../repositories/notes';
import { notFound } from '../errors';
import { changed } from '../events/catalogue';
import { checkPrecondition, userOf, type Precondition, type UseCase } from './use-case';

export const createNote: UseCase<notes.NoteInput, Note> = async (ctx, body) => {
  const userId = userOf(ctx);
  const note = await notes.createNote(ctx.tx, userId, body);
  ctx.emit(userId, changed('note', 'created', note.id, meetingOf(note.subject_type, note.subject_id)));
  return note;
};

export const updateNote: UseCase<{ id: string; patch: notes.NotePatch; precondition?: Precondition }, Note> = async (
  ctx,
  { id, patch, precondition },
) => {
  // guard: note-patch-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match PATCH of a 'note'
  await checkPrecondition(precondition, () => notes.getNote(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const note = await notes.updateNote(ctx.tx, ctx.actor, id, patch);
  if (!note) throw notFound('note');
  ctx.emit(note.user_id, changed('note', 'updated', id, meetingOf(note.subject_type, note.subject_id)));
  return note;
};

export const deleteNote: UseCase<{ id: string; precondition?: Precondition }, void> = async (
  ctx,
  { id, precondition },
) => {
  // guard: note-delete-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match DELETE of a 'note'
  await checkPrecondition(precondition, () => notes.getNote(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const note = await notes.deleteNote(ctx.tx, ctx.actor, id);
  if (!note) throw notFound('note');
  ctx.emit(note.user_id, changed('note', 'deleted', id, meetingOf(note.subject_type, note.subject_id)));
};
