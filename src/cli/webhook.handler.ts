import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, IsNull } from 'typeorm';
import { WebhookCalculatorEntity, WebhookEntity } from '../webhooks/webhook.entity.js';
import { WorkspacesService } from '../workspaces/workspaces.service.js';
import type { CommandOutput } from './provisioning-command.js';
import { table } from './table.js';
import { findWorkspace } from './workspace.handler.js';

interface WebhookSummary {
  id: string;
  name: string;
  url: string;
  calculators: string[];
  state: 'active' | 'disabled';
}

@Injectable()
export class WebhookHandler {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly workspaces: WorkspacesService,
  ) {}

  /** The workspace's registered webhooks (removed ones are gone, disabled ones listed), oldest first. */
  async list(workspaceId: string): Promise<CommandOutput> {
    const workspace = await findWorkspace(this.workspaces, workspaceId);
    const webhooks = await this.summaries(workspace.id);
    return {
      json: { data: webhooks },
      text:
        webhooks.length > 0
          ? table([
              ['ID', 'NAME', 'URL', 'CALCULATORS', 'STATE'],
              ...webhooks.map((w) => [w.id, w.name, w.url, w.calculators.join(','), w.state]),
            ])
          : `Workspace ${workspace.id} has no webhooks.`,
    };
  }

  private async summaries(workspaceId: string): Promise<WebhookSummary[]> {
    const webhooks = await this.dataSource.getRepository(WebhookEntity).find({
      where: { workspaceId, removedAt: IsNull(), kind: 'webhook' },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
    const links = await this.dataSource.getRepository(WebhookCalculatorEntity).find({
      where: { webhookId: In(webhooks.map((w) => w.id)) },
      order: { calculatorId: 'ASC' },
    });
    return webhooks.map((w) => ({
      id: w.id,
      name: w.name,
      url: w.url,
      calculators: links.filter((l) => l.webhookId === w.id).map((l) => l.calculatorId),
      state: w.disabledAt ? 'disabled' : 'active',
    }));
  }
}
