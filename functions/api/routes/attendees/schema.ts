import { Uuid, z } from '../../openapi';

export const AttendeeParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' }, description: 'meeting id' }),
  personId: Uuid.openapi({ param: { name: 'personId', in: 'path' }, description: "one of the meeting owner's people" }),
});
