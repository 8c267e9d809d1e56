import { describe, expect, it } from 'vitest';
import { destructiveStatements, isWidening } from './destructive';

const types = (t: Record<string, string>) => (table: string, column: string) => t[`${table}.${column}`];

describe('destructiveStatements', () => {
  it.each([
    'drop table "public"."tag";',
    'alter table "public"."meeting" drop column "extra";',
    'drop type "public"."task_source";',
    'drop extension if exists "vector";',
    'drop sequence if exists "public"."legacy_seq";',
  ])('should flag %s, which loses data', (statement) => {
    expect(destructiveStatements([statement])).toEqual([statement]);
  });

  it.each([
    'alter table "public"."person" add column "company" text;',
    'alter table "public"."task" alter column "due_date" drop not null;',
    'alter table "public"."task" alter column "status" drop default;',
    'CREATE INDEX task_meeting_id_idx ON public.task USING btree (meeting_id);',
    // An index or a constraint holds no data: a plan that replaces one under another name is no loss.
    'drop index if exists "public"."ai_thread_user_id_idx";',
    'alter table "public"."task" drop constraint "task_status_check";',
    'alter table "public"."app_user" drop constraint "app_user_email_key";',
    'drop trigger if exists "transcript_segment_set_user_id" on "public"."transcript_segment";',
    'drop function if exists "public"."transcript_segment_set_user_id"();',
    'alter index "public"."old_idx" rename to "new_idx";',
  ])('should pass %s', (statement) => {
    expect(destructiveStatements([statement])).toEqual([]);
  });

  it("should flag a narrowing type change and pass a widening one, by the column's current type", () => {
    const narrow =
      'alter table "public"."tag" alter column "name" set data type character varying(20) using "name"::character varying(20);';
    const widen = 'alter table "public"."tag" alter column "name" set data type text using "name"::text;';
    const bigger =
      'alter table "public"."segment_manifest" alter column "byte_count" set data type bigint using "byte_count"::bigint;';
    const columns = types({ 'tag.name': 'character varying(20)', 'segment_manifest.byte_count': 'integer' });
    expect(destructiveStatements([widen, bigger], columns)).toEqual([]);
    expect(destructiveStatements([narrow], types({ 'tag.name': 'text' }))).toEqual([narrow]);
    expect(destructiveStatements([bigger], types({ 'segment_manifest.byte_count': 'numeric' }))).toEqual([bigger]);
    // A column whose current type is unknown counts as narrowed.
    expect(destructiveStatements([widen])).toEqual([widen]);
  });

  it.each([
    ['character varying(20)', 'text', true],
    ['character varying(20)', 'character varying(40)', true],
    ['character varying(40)', 'character varying(20)', false],
    ['text', 'character varying(20)', false],
    ['integer', 'bigint', true],
    ['bigint', 'integer', false],
    ['integer', 'numeric', true],
    ['numeric(10,2)', 'numeric', true],
    ['numeric(10,2)', 'numeric(12,2)', true],
    ['numeric(10,2)', 'numeric(10,1)', false],
    ['numeric', 'numeric(10,2)', false],
    ['real', 'double precision', true],
    ['double precision', 'real', false],
    ['text', 'integer', false],
  ])('isWidening(%s, %s) is %s', (from, to, widening) => {
    expect(isWidening(from, to)).toBe(widening);
  });
});
