import type { WorkspaceEntity } from './workspace.entity.js';

export interface WorkspaceResponse {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export const serializeWorkspace = (w: WorkspaceEntity): WorkspaceResponse => ({
  id: w.id,
  name: w.name,
  createdAt: w.createdAt.toISOString(),
  updatedAt: w.updatedAt.toISOString(),
});
