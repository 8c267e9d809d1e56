// `npm start`: runs the local stack until Ctrl-C, SIGTERM or SIGHUP (to this process or to any
// of its launchers: npm, sh, tsx), then stops every child and exits.
import { ConfigError } from '@mi/lib/config';
import { DataDirInUseError } from '@mi/lib/db/data-dir-lock';
import { watchLaunchers } from './lifeline';
import { startLocalStack, type LocalStack } from './stack';

let stack: LocalStack | undefined;
let stopping = false;

async function stop(why: string) {
  if (stopping || !stack) {
    // A second signal, or one during start-up: exit now. The emulators' watchdogs stop them when
    // this process is gone; the DATA_DIR lock of a dead pid counts as free.
    console.error(`${why}: exiting${stack ? ' at once' : ' during start-up'}`);
    process.exit(1);
  }
  stopping = true;
  stack.log.info(`${why}: stopping the local stack`);
  await stack.stop();
  stack.log.info('local stack stopped');
  process.exit(0);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal));
watchLaunchers((why) => void stop(why));

try {
  stack = await startLocalStack();
} catch (err) {
  // Configuration and port problems are the user's to fix: their message says what, no stack trace.
  const known = err instanceof ConfigError || err instanceof DataDirInUseError;
  console.error(known || !(err instanceof Error) ? String(err instanceof Error ? err.message : err) : err.stack);
  process.exit(1);
}
