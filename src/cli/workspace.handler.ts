import { Injectable } from '@nestjs/common';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { serializeWorkspace } from '../workspaces/workspace.serializer.js';
import { WorkspacesService } from '../workspaces/workspaces.service.js';
import { CliError } from './cli-error.js';
import type { CommandOutput } from './provisioning-command.js';

/** The workspace a command names, or the failure every command reports for an unknown one. */
export async function findWorkspace(workspaces: WorkspacesService, id: string): Promise<WorkspaceEntity> {
  const workspace = await workspaces.findById(id);
  if (!workspace) throw new CliError(`unknown workspace "${id}"`);
  return workspace;
}

@Injectable()
export class WorkspaceHandler {
  constructor(private readonly workspaces: WorkspacesService) {}

  async create(name: string): Promise<CommandOutput> {
    const { workspace, key } = await this.workspaces.create(name);
    return {
      json: { workspace: serializeWorkspace(workspace), apiKey: key },
      text: [
        `Created workspace "${workspace.name}" (id ${workspace.id}).`,
        'API key (shown once; only its hash is stored):',
        `  ${key}`,
      ].join('\n'),
    };
  }
}
