import { describe, expect, it } from 'vitest';
import { destructiveStatements } from './destructive';

describe('destructiveStatements', () => {
  it.each([
    'drop table "public"."tag";',
    'alter table "public"."meeting" drop column "extra";',
    'drop type "public"."task_source";',
    'drop extension if exists "vector";',
    'drop index if exists "public"."task_meeting_id_idx";',
    'alter table "public"."task" drop constraint "task_status_check";',
    'alter table "public"."tag" alter column "name" set data type character varying(20) using "name"::character varying(20);',
    'alter table "public"."tag" alter column "name" type integer;',
  ])('should flag %s', (statement) => {
    expect(destructiveStatements([statement])).toEqual([statement]);
  });

  it.each([
    'alter table "public"."person" add column "company" text;',
    'alter table "public"."task" alter column "due_date" drop not null;',
    'alter table "public"."task" alter column "status" drop default;',
    'CREATE INDEX task_meeting_id_idx ON public.task USING btree (meeting_id);',
  ])('should pass %s', (statement) => {
    expect(destructiveStatements([statement])).toEqual([]);
  });

  it('should pass an index or constraint that the same plan recreates', () => {
    const plan = [
      'drop index if exists "public"."task_meeting_id_idx";',
      'alter table "public"."task" drop constraint "task_status_check";',
      'CREATE INDEX task_meeting_id_idx ON public.task USING btree (meeting_id, created_at);',
      `alter table "public"."task" add constraint "task_status_check" CHECK ((status = ANY (ARRAY['pending'::text]))) not valid;`,
    ];
    expect(destructiveStatements(plan)).toEqual([]);
  });

  it('should flag a dropped index when another index is created', () => {
    const plan = ['drop index if exists "public"."task_meeting_id_idx";', 'CREATE INDEX task_meeting_id_idx2 ON public.task USING btree (meeting_id);'];
    expect(destructiveStatements(plan)).toEqual([plan[0]]);
  });
});
