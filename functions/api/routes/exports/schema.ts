import { Timestamp, Uuid, z } from '../../openapi';

export const ExportStatus = z.enum(['pending', 'running', 'ready', 'failed']);

export const CreatedExportSchema = z
  .object({ id: Uuid, status: z.literal('pending'), created_at: Timestamp })
  .openapi('AccountExportCreated');

export const AccountExportSchema = z
  .object({
    id: Uuid,
    status: ExportStatus.openapi({
      description: 'pending (waiting for the builder), running, ready (the archive can be downloaded), failed',
    }),
    created_at: Timestamp,
    completed_at: Timestamp.nullable().openapi({ description: 'when it became ready or failed' }),
    byte_count: z.number().int().nullable().openapi({ description: 'size of the ZIP archive, once ready' }),
    url: z
      .string()
      .url()
      .nullable()
      .openapi({ description: 'while ready: a fresh signed link to the ZIP, valid ACCOUNT_EXPORT_URL_TTL_SECONDS' }),
    url_expires_at: Timestamp.nullable(),
    error: z.string().nullable().openapi({ description: 'why it failed' }),
  })
  .openapi('AccountExport');
