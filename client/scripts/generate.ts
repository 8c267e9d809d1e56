// `npm run client:generate`: regenerates the client's types from the app's OpenAPI document.
// test/generated.test.ts fails when the checked-in files differ from this output.
import { writeFile } from 'node:fs/promises';
import { generatedFiles } from './generated-files';

for (const [file, text] of Object.entries(await generatedFiles())) {
  await writeFile(file, text);
  console.log(`wrote ${file}`);
}
