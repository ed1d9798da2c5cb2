import type { INestApplicationContext } from '@nestjs/common';
import { DataSource, IsNull } from 'typeorm';
import type { ApiKeyEntity } from '../auth/api-key.entity.js';
import { ApiKeysService } from '../auth/api-keys.service.js';
import { CalculatorEntity } from '../calculators/calculator.entity.js';
import { serializeCalculator } from '../calculators/calculator.serializer.js';
import { CalculatorsService } from '../calculators/calculators.service.js';
import type { AppConfig } from '../core/config/config.js';
import { serializeSubmission } from '../submissions/submission.serializer.js';
import { SubmissionsModule } from '../submissions/submissions.module.js';
import { SubmissionsService } from '../submissions/submissions.service.js';
import { DEMO_API_KEY, DEMO_CALCULATORS, describeDemoSeed, seedDemo } from '../workspaces/demo-seed.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { serializeWorkspace } from '../workspaces/workspace.serializer.js';
import { WorkspacesService } from '../workspaces/workspaces.service.js';
import { CliError } from './cli-error.js';
import type { CliImports } from './cli.module.js';
import type { CommandName } from './commands.js';

export interface CommandContext {
  app: INestApplicationContext;
  config: AppConfig;
}

/** `json` is printed with --json (one object), `text` otherwise. */
export interface CommandOutput {
  json: object;
  text: string;
}

export interface CommandHandler {
  /** Modules beyond the CLI's own that the command needs (e.g. the queue, which connects to Redis). */
  imports?: CliImports;
  run(ctx: CommandContext, options: Record<string, string>): Promise<CommandOutput>;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** What may be shown of a key after its creation: never the key itself nor its hash. */
const serializeKeySummary = (k: ApiKeyEntity) => ({
  prefix: k.prefix,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: iso(k.lastUsedAt),
  revokedAt: iso(k.revokedAt),
});

async function findWorkspace(app: INestApplicationContext, id: string): Promise<WorkspaceEntity> {
  const workspace = await app.get(WorkspacesService).findById(id);
  if (!workspace) throw new CliError(`unknown workspace "${id}"`);
  return workspace;
}

function keyTable(keys: ApiKeyEntity[]): string {
  const rows = [
    ['PREFIX', 'CREATED', 'LAST USED', 'REVOKED'],
    ...keys.map((k) => [k.prefix, k.createdAt.toISOString(), iso(k.lastUsedAt) ?? '-', iso(k.revokedAt) ?? '-']),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export const HANDLERS: Record<CommandName, CommandHandler> = {
  'workspace:create': {
    async run({ app }, { name }) {
      const { workspace, key } = await app.get(WorkspacesService).create(name);
      return {
        json: { workspace: serializeWorkspace(workspace), apiKey: key },
        text: [
          `Created workspace "${workspace.name}" (id ${workspace.id}).`,
          'API key (shown once; only its hash is stored):',
          `  ${key}`,
        ].join('\n'),
      };
    },
  },

  'apikey:create': {
    async run({ app }, { workspace: workspaceId }) {
      const workspace = await findWorkspace(app, workspaceId);
      const { key, apiKey } = await app.get(ApiKeysService).issue(workspace.id);
      return {
        json: { apiKey: key, ...serializeKeySummary(apiKey) },
        text: `New API key for workspace ${workspace.id} (shown once; only its hash is stored):\n  ${key}`,
      };
    },
  },

  'apikey:list': {
    async run({ app }, { workspace: workspaceId }) {
      const workspace = await findWorkspace(app, workspaceId);
      const keys = await app.get(ApiKeysService).list(workspace.id);
      return {
        json: { data: keys.map(serializeKeySummary) },
        text: keys.length > 0 ? keyTable(keys) : `Workspace ${workspace.id} has no API keys.`,
      };
    },
  },

  'apikey:revoke': {
    async run({ app }, { workspace: workspaceId, prefix }) {
      const workspace = await findWorkspace(app, workspaceId);
      const apiKeys = app.get(ApiKeysService);
      const revoked = await apiKeys.revoke(workspace.id, prefix);
      if (!revoked) {
        const existing = (await apiKeys.list(workspace.id)).find((k) => k.prefix === prefix);
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
    },
  },

  'calculator:create': {
    async run({ app }, { workspace: workspaceId, name, status }) {
      const workspace = await findWorkspace(app, workspaceId);
      const calculator = serializeCalculator(
        await app.get(CalculatorsService).create({ workspaceId: workspace.id, name, status }),
      );
      return { json: calculator, text: JSON.stringify(calculator, null, 2) };
    },
  },

  'submission:create': {
    imports: [SubmissionsModule],
    async run({ app }, { calculator: calculatorId, data, finished, meta }) {
      const calculator = await app
        .get(DataSource)
        .getRepository(CalculatorEntity)
        .findOneBy({ id: calculatorId, removedAt: IsNull() });
      if (!calculator) throw new CliError(`unknown calculator "${calculatorId}"`);
      const submission = serializeSubmission(
        await app.get(SubmissionsService).create(calculator.workspaceId, calculator.id, {
          data: JSON.parse(data) as Record<string, unknown>,
          finished: finished === 'true',
          meta: JSON.parse(meta) as Record<string, unknown>,
        }),
      );
      return { json: submission, text: JSON.stringify(submission, null, 2) };
    },
  },

  'seed:demo': {
    async run({ app, config }) {
      const result = await seedDemo(app, config);
      return {
        json: {
          workspace: serializeWorkspace(result.workspace),
          apiKey: DEMO_API_KEY,
          calculators: DEMO_CALCULATORS,
          created: result.created,
          apiKeyRevoked: result.apiKeyRevoked,
        },
        text: describeDemoSeed(result, config.port).join('\n'),
      };
    },
  },
};
