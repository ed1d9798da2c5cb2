import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { CalculatorEntity } from '../calculators/calculator.entity.js';
import { WebhookEntity } from '../webhooks/webhook.entity.js';
import { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { serializeWorkspace } from '../workspaces/workspace.serializer.js';
import { WorkspacesService } from '../workspaces/workspaces.service.js';
import { CliError } from './cli-error.js';
import type { CommandOutput } from './provisioning-command.js';
import { table } from './table.js';

interface WorkspaceSummary {
  id: string;
  name: string;
  createdAt: string;
  calculators: number;
  webhooks: number;
}

/** The workspace a command names, or the failure every command reports for an unknown one. */
export async function findWorkspace(workspaces: WorkspacesService, id: string): Promise<WorkspaceEntity> {
  const workspace = await workspaces.findById(id);
  if (!workspace) throw new CliError(`unknown workspace "${id}"`);
  return workspace;
}

@Injectable()
export class WorkspaceHandler {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly workspaces: WorkspacesService,
  ) {}

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

  /** Every workspace, oldest first, with its calculators and registered webhooks counted (removed ones not). */
  async list(): Promise<CommandOutput> {
    const workspaces = await this.summaries();
    return {
      json: { data: workspaces },
      text:
        workspaces.length > 0
          ? table([
              ['ID', 'NAME', 'CREATED', 'CALCULATORS', 'WEBHOOKS'],
              ...workspaces.map((w) => [w.id, w.name, w.createdAt, String(w.calculators), String(w.webhooks)]),
            ])
          : 'No workspaces.',
    };
  }

  private async summaries(): Promise<WorkspaceSummary[]> {
    const rows = await this.dataSource
      .getRepository(WorkspaceEntity)
      .createQueryBuilder('w')
      .select(['w.id AS id', 'w.name AS name', 'w.created_at AS created_at'])
      .addSelect(
        (q) =>
          q.select('count(*)::int').from(CalculatorEntity, 'c').where('c.workspace_id = w.id AND c.removed_at IS NULL'),
        'calculators',
      )
      .addSelect(
        (q) =>
          q
            .select('count(*)::int')
            .from(WebhookEntity, 'h')
            .where("h.workspace_id = w.id AND h.removed_at IS NULL AND h.kind = 'webhook'"),
        'webhooks',
      )
      .orderBy('w.created_at', 'ASC')
      .addOrderBy('w.id', 'ASC')
      .getRawMany<{ id: string; name: string; created_at: Date; calculators: number; webhooks: number }>();
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      createdAt: r.created_at.toISOString(),
      calculators: r.calculators,
      webhooks: r.webhooks,
    }));
  }
}
