import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { WorkspaceEntity } from './workspace.entity.js';

/** Spec 2.5. */
@ApiSchema({ name: 'Workspace' })
export class WorkspaceResponse {
  @ApiProperty()
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ format: 'date-time', description: 'ISO 8601 UTC, with milliseconds' })
  createdAt: string;

  @ApiProperty({ format: 'date-time', description: 'ISO 8601 UTC, with milliseconds' })
  updatedAt: string;
}

export const serializeWorkspace = (w: WorkspaceEntity): WorkspaceResponse => ({
  id: w.id,
  name: w.name,
  createdAt: w.createdAt.toISOString(),
  updatedAt: w.updatedAt.toISOString(),
});
