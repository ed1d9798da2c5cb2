import { Command, Option } from 'nest-commander';
import type { ApiKeyHandler } from './apikey.handler.js';
import { parseKeyPrefix, parseNonEmpty } from './options.js';
import { ProvisioningCommand, type CommandOutput } from './provisioning-command.js';
import { WORKSPACE_OPTION } from './workspace.command.js';

const apiKeyHandler = () => import('./apikey.handler.js').then((m) => m.ApiKeyHandler);

interface WorkspaceOptions {
  workspace: string;
}

@Command({
  name: 'apikey:create',
  description: 'Issue another API key for a workspace (the key is printed once)',
})
export class ApiKeyCreateCommand extends ProvisioningCommand<ApiKeyHandler, WorkspaceOptions> {
  protected readonly handler = apiKeyHandler;

  @Option(WORKSPACE_OPTION)
  parseWorkspace(raw: string): string {
    return parseNonEmpty(raw, '--workspace');
  }

  protected execute(keys: ApiKeyHandler, { workspace }: WorkspaceOptions): Promise<CommandOutput> {
    return keys.create(workspace);
  }
}

@Command({
  name: 'apikey:list',
  description: "List a workspace's API keys: prefix, created, last used, revoked (never the key)",
})
export class ApiKeyListCommand extends ProvisioningCommand<ApiKeyHandler, WorkspaceOptions> {
  protected readonly handler = apiKeyHandler;

  @Option(WORKSPACE_OPTION)
  parseWorkspace(raw: string): string {
    return parseNonEmpty(raw, '--workspace');
  }

  protected execute(keys: ApiKeyHandler, { workspace }: WorkspaceOptions): Promise<CommandOutput> {
    return keys.list(workspace);
  }
}

type RevokeOptions = WorkspaceOptions & { prefix: string };

@Command({
  name: 'apikey:revoke',
  description: 'Revoke an API key by its prefix; its next request gets 401',
})
export class ApiKeyRevokeCommand extends ProvisioningCommand<ApiKeyHandler, RevokeOptions> {
  protected readonly handler = apiKeyHandler;

  @Option(WORKSPACE_OPTION)
  parseWorkspace(raw: string): string {
    return parseNonEmpty(raw, '--workspace');
  }

  @Option({ flags: '--prefix <prefix>', description: 'key prefix as apikey:list shows it', required: true })
  parsePrefix(raw: string): string {
    return parseKeyPrefix(raw, '--prefix');
  }

  protected execute(keys: ApiKeyHandler, { workspace, prefix }: RevokeOptions): Promise<CommandOutput> {
    return keys.revoke(workspace, prefix);
  }
}
