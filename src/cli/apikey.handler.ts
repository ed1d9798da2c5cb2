import { Injectable } from '@nestjs/common';
import type { ApiKeyEntity } from '../auth/api-key.entity.js';
import { ApiKeysService } from '../auth/api-keys.service.js';
import { WorkspacesService } from '../workspaces/workspaces.service.js';
import { CliError } from './cli-error.js';
import type { CommandOutput } from './provisioning-command.js';
import { table } from './table.js';
import { findWorkspace } from './workspace.handler.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** What may be shown of a key after its creation: never the key itself nor its hash. */
const serializeKeySummary = (k: ApiKeyEntity) => ({
  prefix: k.prefix,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: iso(k.lastUsedAt),
  revokedAt: iso(k.revokedAt),
});

function keyTable(keys: ApiKeyEntity[]): string {
  return table([
    ['PREFIX', 'CREATED', 'LAST USED', 'REVOKED'],
    ...keys.map((k) => [k.prefix, k.createdAt.toISOString(), iso(k.lastUsedAt) ?? '-', iso(k.revokedAt) ?? '-']),
  ]);
}

@Injectable()
export class ApiKeyHandler {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly apiKeys: ApiKeysService,
  ) {}

  async create(workspaceId: string): Promise<CommandOutput> {
    const workspace = await findWorkspace(this.workspaces, workspaceId);
    const { key, apiKey } = await this.apiKeys.issue(workspace.id);
    return {
      json: { apiKey: key, ...serializeKeySummary(apiKey) },
      text: `New API key for workspace ${workspace.id} (shown once; only its hash is stored):\n  ${key}`,
    };
  }

  async list(workspaceId: string): Promise<CommandOutput> {
    const workspace = await findWorkspace(this.workspaces, workspaceId);
    const keys = await this.apiKeys.list(workspace.id);
    return {
      json: { data: keys.map(serializeKeySummary) },
      text: keys.length > 0 ? keyTable(keys) : `Workspace ${workspace.id} has no API keys.`,
    };
  }

  async revoke(workspaceId: string, prefix: string): Promise<CommandOutput> {
    const workspace = await findWorkspace(this.workspaces, workspaceId);
    const revoked = await this.apiKeys.revoke(workspace.id, prefix);
    if (!revoked) {
      const existing = (await this.apiKeys.list(workspace.id)).find((k) => k.prefix === prefix);
      throw new CliError(
        existing
          ? `API key ${prefix} was already revoked at ${iso(existing.revokedAt)}`
          : `workspace ${workspace.id} has no API key with prefix ${prefix}`,
      );
    }
    return {
      json: serializeKeySummary(revoked),
      text: `Revoked API key ${prefix} of workspace ${workspace.id}; requests with it now get 401.`,
    };
  }
}
