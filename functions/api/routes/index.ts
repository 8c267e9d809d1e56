import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env';
import { registerMe } from './me';
import { registerMeetings } from './meetings';
import { registerTasks } from './tasks';
import { registerSubTasks } from './sub-tasks';
import { registerNotes } from './notes';
import { registerThreads } from './threads';
import { registerFeatureFlags } from './feature-flags';
import { registerPeople } from './people';
import { registerPersonSummaries } from './person-summaries';
import { registerTags } from './tags';
import { registerAttendees } from './attendees';
import { registerSpeakerLabels } from './speaker-labels';
import { registerVoiceMatches } from './voice-matches';
import { registerTranscriptions } from './transcriptions';
import { registerTalkingPoints } from './talking-points';
import { registerSynthesis } from './synthesis';
import { registerTopics } from './topics';
import { registerSystemTasks } from './system-tasks';
import { registerRecording } from './recording';
import { registerAudio } from './audio';
import { registerSearch } from './search';

/** Every resource's routes, registered on the one app. */
export function registerRoutes(app: OpenAPIHono<AppEnv>) {
  registerMe(app);
  registerMeetings(app);
  registerTasks(app);
  registerSubTasks(app);
  registerNotes(app);
  registerThreads(app);
  registerFeatureFlags(app);
  registerPeople(app);
  registerPersonSummaries(app);
  registerTags(app);
  registerAttendees(app);
  registerSpeakerLabels(app);
  registerVoiceMatches(app);
  registerTranscriptions(app);
  registerTalkingPoints(app);
  registerSynthesis(app);
  registerTopics(app);
  registerSystemTasks(app);
  registerRecording(app);
  registerAudio(app);
  registerSearch(app);
}
