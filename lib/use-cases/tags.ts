// The caller's tags.
import * as tags from '../repositories/tags';
import type { Tag } from '../repositories/tags';
import { notFound } from '../errors';
import { changed } from '../events/catalogue';
import { userOf, type UseCase } from './use-case';

export const createTag: UseCase<{ name: string }, Tag> = async (ctx, { name }) => {
  const userId = userOf(ctx);
  const tag = await tags.createTag(ctx.tx, userId, name);
  ctx.emit(userId, changed('tag', 'created', tag.id, null));
  return tag;
};

export const renameTag: UseCase<{ id: string; name: string }, Tag> = async (ctx, { id, name }) => {
  const userId = userOf(ctx);
  const tag = await tags.renameTag(ctx.tx, { userId }, id, name);
  if (!tag) throw notFound('tag');
  ctx.emit(userId, changed('tag', 'updated', id, null));
  return tag;
};

export const deleteTag: UseCase<{ id: string }, void> = async (ctx, { id }) => {
  const userId = userOf(ctx);
  if (!(await tags.deleteTag(ctx.tx, { userId }, id))) throw notFound('tag');
  ctx.emit(userId, changed('tag', 'deleted', id, null));
};
