import { Uuid, z } from '../../openapi';
import { DueDate, TaskContent, TaskSchema } from '../tasks/schema';

export const CreateSystemTasksBody = z
  .object({
    tasks: z
      .array(
        z
          .object({
            content: TaskContent,
            due_date: DueDate.nullable().optional(),
            assigned_to: Uuid.nullable().optional().openapi({ description: "a person of the meeting's owner" }),
          })
          .strict(),
      )
      .max(500),
  })
  .strict()
  .openapi('CreateSystemTasks', {
    example: { tasks: [{ content: 'Send the proposal to Dana', due_date: '2026-12-01', assigned_to: null }] },
  });

export const SystemTaskList = z.object({ items: z.array(TaskSchema) }).openapi('SystemTaskList');

export const DeleteSystemTasksQuery = z.object({
  source: z.literal('system').openapi({ description: 'must be `system`; user tasks are never deleted here' }),
});
