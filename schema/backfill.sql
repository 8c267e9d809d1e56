-- Data steps db:apply appends to every non-empty plan (same transaction): values a declarative
-- diff cannot produce for rows that existed before their column did. Each statement must be
-- idempotent (a no-op once done) and cheap to repeat.

-- transcript_segment.user_id (GET /search): the owner of the segment's meeting. New rows get it
-- from the trigger; this fills the rows written before the column existed.
UPDATE transcript_segment s SET user_id = m.user_id
FROM transcription t JOIN meeting m ON m.id = t.meeting_id
WHERE s.user_id IS NULL AND t.id = s.transcription_id;
