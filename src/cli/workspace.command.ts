import { Command, Option } from 'nest-commander';
import { parseName } from './options.js';
import { ProvisioningCommand, type CommandOutput } from './provisioning-command.js';
import type { WorkspaceHandler } from './workspace.handler.js';

export const WORKSPACE_OPTION = { flags: '--workspace <id>', description: 'id of the workspace', required: true };

@Command({
  name: 'workspace:create',
  description: 'Create a workspace and its first API key (the key is printed once)',
})
export class WorkspaceCreateCommand extends ProvisioningCommand<WorkspaceHandler, { name: string }> {
  protected readonly handler = () => import('./workspace.handler.js').then((m) => m.WorkspaceHandler);

  @Option({ flags: '--name <name>', description: 'workspace name, 1-255 characters', required: true })
  parseName(raw: string): string {
    return parseName(raw, '--name');
  }

  protected execute(workspaces: WorkspaceHandler, { name }: { name: string }): Promise<CommandOutput> {
    return workspaces.create(name);
  }
}

@Command({
  name: 'workspace:list',
  description: 'List the workspaces: id, name, created, counts of calculators and webhooks',
})
export class WorkspaceListCommand extends ProvisioningCommand<WorkspaceHandler, object> {
  protected readonly handler = () => import('./workspace.handler.js').then((m) => m.WorkspaceHandler);

  protected execute(workspaces: WorkspaceHandler): Promise<CommandOutput> {
    return workspaces.list();
  }
}
