// `npm start`: runs the local stack until Ctrl-C (or SIGTERM), then stops every child.
import { startLocalStack } from './stack';

try {
  const stack = await startLocalStack();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
}
