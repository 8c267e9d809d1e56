import { Timestamp, Uuid, z } from '../../openapi';
import { DueDate, TaskContent, TaskStatus } from '../tasks/schema';

export const SubTaskSchema = z
  .object({
    id: Uuid,
    task_id: Uuid,
    content: z.string(),
    status: TaskStatus,
    assigned_to: Uuid.nullable().openapi({ description: 'person id' }),
    due_date: DueDate.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('SubTask', {
    description: 'Legacy; new clients nest tasks with parent_task_id.',
    example: {
      id: '5d2e1f0a-9b8c-4d7e-8f6a-1b2c3d4e5f60',
      task_id: '3f1c2a9e-8b4d-4e0a-9c1f-2d7e6b5a4c3d',
      content: 'Draft the outline',
      status: 'pending',
      assigned_to: null,
      due_date: null,
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

const fields = {
  status: TaskStatus.optional(),
  assigned_to: Uuid.nullable().optional().openapi({ description: "one of the caller's people" }),
  due_date: DueDate.nullable().optional(),
};

export const CreateSubTaskBody = z
  .object({ content: TaskContent, ...fields })
  .strict()
  .openapi('CreateSubTask');

export const PatchSubTaskBody = z
  .object({ content: TaskContent.optional(), ...fields })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchSubTask');
