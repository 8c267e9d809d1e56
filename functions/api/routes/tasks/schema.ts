import { Timestamp, Uuid, z } from '../../openapi';

export const TaskStatus = z.enum(['pending', 'completed']).openapi('TaskStatus');
export const TaskSource = z.enum(['user', 'system']).openapi('TaskSource');
export const DueDate = z.iso.date().openapi({ description: 'calendar date YYYY-MM-DD', example: '2026-12-01' });
export const TaskContent = z.string().trim().min(1).max(10_000);

export const TaskSchema = z
  .object({
    id: Uuid,
    user_id: Uuid,
    content: z.string(),
    status: TaskStatus,
    source: TaskSource,
    due_date: DueDate.nullable(),
    assigned_to: Uuid.nullable().openapi({ description: 'person id' }),
    meeting_id: Uuid.nullable(),
    parent_task_id: Uuid.nullable(),
    deleted_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Task', {
    example: {
      id: '3f1c2a9e-8b4d-4e0a-9c1f-2d7e6b5a4c3d',
      user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
      content: 'Send the proposal to Dana',
      status: 'pending',
      source: 'user',
      due_date: '2026-12-01',
      assigned_to: null,
      meeting_id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e',
      parent_task_id: null,
      deleted_at: null,
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

const refs = {
  due_date: DueDate.nullable().optional(),
  assigned_to: Uuid.nullable().optional().openapi({ description: "one of the caller's people" }),
  meeting_id: Uuid.nullable().optional().openapi({ description: "one of the caller's meetings" }),
  parent_task_id: Uuid.nullable()
    .optional()
    .openapi({ description: "one of the caller's tasks; never the task itself or a descendant" }),
};

export const CreateTaskBody = z
  .object({ content: TaskContent, status: TaskStatus.optional().openapi({ description: 'default pending' }), ...refs })
  .strict()
  .openapi('CreateTask');

export const PatchTaskBody = z
  .object({ content: TaskContent.optional(), status: TaskStatus.optional(), ...refs })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchTask');
